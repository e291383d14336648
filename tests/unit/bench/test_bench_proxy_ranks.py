"""bench/bench_proxy_ranks.py: rank correlation of early and final losses, its interval, the loaders."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from bench import bench_proxy_ranks as bp


def test_rank_preserving_curves_give_one_and_the_first_step() -> None:
    losses = tuple(tuple(3.0 - 0.1 * j + 0.01 * i for j in range(6)) for i in range(10))
    curves = bp.Curves("ordered", (50, 100, 150, 200, 250, 300), losses)
    rows = bp.proxy_table(curves, resamples=200)
    assert [r.step for r in rows] == [50, 100, 150, 200, 250]
    assert all(r.spearman == pytest.approx(1.0) and r.n == 10 for r in rows)
    assert bp.first_step(rows, 0.8) == 50


def test_first_step_is_where_early_noise_gives_way() -> None:
    rng = random.Random(0)
    finals = [rng.gauss(2.0, 0.1) for _ in range(40)]
    # step 50 is noise, from step 100 on the loss tracks the final one
    losses = tuple((rng.gauss(3, 1), f + 0.3 + rng.gauss(0, 0.02), f + 0.1, f) for f in finals)
    rows = bp.proxy_table(bp.Curves("noisy start", (50, 100, 150, 200), losses), resamples=300)
    assert abs(rows[0].spearman) < 0.4 and rows[1].spearman > 0.9
    assert bp.first_step(rows, 0.8) == 100
    assert bp.first_step(rows, 0.8, "low") == 100
    # a dip back below the level later moves the recommendation past it
    dipped = [rows[0], bp.Row(100, 0.5, 0.0, 1.0, 40), rows[2]]
    assert bp.first_step(dipped, 0.8) == 150


@pytest.mark.slow
def test_bootstrap_interval_covers_the_true_spearman_about_95_percent() -> None:
    """Simulated against known truth: for a bivariate normal with correlation r, Spearman's
    rho is (6 / pi) asin(r / 2)."""
    r, n, sims = 0.7, 30, 120
    truth = 6 / math.pi * math.asin(r / 2)
    rng = random.Random(1)
    covered = 0
    for k in range(sims):
        xs = [rng.gauss(0, 1) for _ in range(n)]
        ys = [r * x + math.sqrt(1 - r * r) * rng.gauss(0, 1) for x in xs]
        lo, hi = bp.bootstrap_interval(xs, ys, resamples=300, seed=k)
        covered += lo <= truth <= hi
    assert 0.85 <= covered / sims <= 1.0  # nominal 0.95; percentile intervals run a little short at n = 30


def test_bootstrap_is_reproducible_and_skips_undefined_resamples() -> None:
    a, b = [1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]
    assert bp.bootstrap_interval(a, b, 100, seed=3) == bp.bootstrap_interval(a, b, 100, seed=3)
    assert all(math.isnan(v) for v in bp.bootstrap_interval([1.0, 1.0], [1.0, 2.0], 50))


def test_recorded_tables_load() -> None:
    ref = bp.load(bp.REFERENCE_RUN)
    # 4 baselines, 1 sampled, 6 verify (stream init, 2026-11-29), 40 verify (keyed init, 2026-12-01)
    assert ref.steps == (50, 100, 150, 200, 250, 300) and len(ref.losses) == 51
    rows = bp.proxy_table(ref, resamples=200)
    assert rows[0].spearman == pytest.approx(0.604, abs=0.001)  # the weak first rung (0.518 over the first 11)
    assert bp.first_step(rows, 0.8) == 100
    small = bp.load(bp.SAMPLER_TABLE)
    assert small.steps == (50, 100, 150, 200) and len(small.losses) == 25


def test_main_prints_a_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert bp.main(["--table", str(bp.REFERENCE_RUN), "--resamples", "50", "--out", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "Spearman" in out and "first rung where Spearman >= 0.8 from then on: 100" in out
    assert (tmp_path / "r.json").is_file()
