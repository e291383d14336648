"""The noise-factor benchmark: its run order, its paired statistics, and one real run at toy size."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest

from bench.bench_noise import CELLS, SCORES, analyse, plan, render, run_one, seeds_to_decide


def fake_rows(diffs: list[float], cell: str = "today", base: float = 2.0) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for seed, d in enumerate(diffs):
        offset = 0.01 * seed  # seed-to-seed spread shared by both profiles: pairing removes it
        rows.append({"cell": cell, "profile": "cosine", "seed": seed, "train_cpu_s": 10.0,
                     "scores": dict.fromkeys(SCORES, base + offset)})  # fmt: skip
        rows.append({"cell": cell, "profile": "uniform", "seed": seed, "train_cpu_s": 12.0,
                     "scores": dict.fromkeys(SCORES, base + offset + d)})  # fmt: skip
    return rows


def test_plan_gives_cheap_cells_and_complete_pairs_first() -> None:
    order = plan(["today", "t5"], ["uniform", "cosine", "linear"], [0, 1])
    pairs = [("today", "uniform", 0), ("today", "cosine", 0), ("today", "uniform", 1), ("today", "cosine", 1)]
    assert order[:4] == pairs
    assert order[4][0] == "t5"
    assert [k for k in order if k[1] == "linear"] == order[-4:]
    assert len(order) == len(set(order)) == 12


def test_paired_statistics_against_hand_figures() -> None:
    diffs = [0.012, 0.008, 0.011, 0.009, 0.010]
    rows = analyse(fake_rows(diffs))
    (row,) = [r for r in rows if r.pair == ("uniform", "cosine") and r.score == "all/ema"]
    assert row.n == 5
    assert row.gap == pytest.approx(statistics.fmean(diffs))
    assert row.paired_sd == pytest.approx(statistics.stdev(diffs))
    sd_cos = statistics.stdev([0.01 * s for s in range(5)])
    sd_uni = statistics.stdev([0.01 * s + d for s, d in enumerate(diffs)])
    assert (row.sd_a, row.sd_b) == (pytest.approx(sd_uni), pytest.approx(sd_cos))
    # unpaired: the sd of a difference of independent runs, from both profiles' own spreads
    assert row.unpaired_sd == pytest.approx(math.sqrt(sd_uni**2 + sd_cos**2))
    assert row.ratio == pytest.approx(statistics.stdev(diffs) / math.sqrt(sd_uni**2 + sd_cos**2))
    assert row.paired_sd < row.unpaired_sd  # the shared spread is paired away
    uni = [0.01 * s + d for s, d in enumerate(diffs)]
    assert row.correlation == pytest.approx(statistics.correlation(uni, [0.01 * s for s in range(5)]))
    assert row.seeds_to_decide == pytest.approx((2.8 * statistics.stdev(diffs) / math.log(1.01)) ** 2)
    assert row.cpu_s == pytest.approx(11.0)
    assert "uniform-cosine" in render(rows)


def test_seeds_to_decide_scales_with_the_square_of_the_sd() -> None:
    assert seeds_to_decide(0.02) == pytest.approx(4 * seeds_to_decide(0.01))
    assert seeds_to_decide(math.log(1.01) / 2.8) == pytest.approx(1.0)


def test_a_pair_needs_two_seeds_with_both_profiles() -> None:
    rows = fake_rows([0.01])
    assert analyse(rows) == []


def test_cells_cover_the_factors_the_table_reports() -> None:
    assert {c.tokens_per_param for c in CELLS.values()} >= {5, 20}
    assert {c.schedule for c in CELLS.values()} == {"cosine", "wsd"}
    assert {c.data for c in CELLS.values()} == {"shakespeare", "tenth"}


@pytest.mark.slow
def test_one_real_run_at_toy_size_scores_every_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    row = run_one("t5-rep", "cosine", 3, True, str(tmp_path))
    assert set(row["scores"]) == set(SCORES)
    assert row["steps"] == 12 and row["schedule"] == "cosine"
    assert row["val_tokens"]["32"] < row["val_tokens"]["512"]
    assert row["epochs"] > 0 and row["tokens_per_param"] > 0
    # the last weights and their average score differently; the checkpoint is gone after the run
    assert row["scores"]["all/last"] != row["scores"]["all/ema"]
    assert not any((tmp_path / "noise-ckpt").glob("*"))
