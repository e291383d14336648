"""The common-random-numbers benchmark's analysis: pairing of trials, and the sd-ratio
intervals checked by simulation against a known truth."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from bench.bench_crn import crn_summary, f_interval, keyed_rows, paired_differences, pitman_morgan_interval, run_twin


def rows_from(diffs: dict[str, list[float]]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for mode, ds in diffs.items():
        for seed, d in enumerate(ds):
            rows.append({"init": mode, "seed": seed, "profile": "cosine", "val_loss": 2.0})
            rows.append({"init": mode, "seed": seed, "profile": "uniform", "val_loss": 2.0 + d})
    return rows


def test_paired_differences_and_summary() -> None:
    rows = rows_from({"stream": [0.04, -0.02, 0.01, 0.03], "keyed": [0.011, 0.009, 0.010, 0.012]})
    rows.append({"init": "keyed", "seed": 9, "profile": "uniform", "val_loss": 3.0})  # no cosine partner
    d = paired_differences(rows)
    assert d["stream"] == pytest.approx({0: 0.04, 1: -0.02, 2: 0.01, 3: 0.03})
    assert 9 not in d["keyed"]
    s = crn_summary(rows)
    assert s["paired_seeds"] == [0, 1, 2, 3]
    assert s["sd_ratio"] == pytest.approx(
        np.std([0.04, -0.02, 0.01, 0.03], ddof=1) / np.std([11, 9, 10, 12], ddof=1) * 1000
    )
    lo, hi = s["pitman_morgan"]
    assert lo < s["sd_ratio"] < hi


@pytest.mark.parametrize("rho", [0.0, 0.6])
def test_pitman_morgan_interval_covers_the_true_ratio(rho: float) -> None:
    """Paired normal samples of n = 6 with sd ratio 3 and correlation rho: the 95% interval
    covers 3 in 95% of 200 simulations (binomial sd 1.5%; tolerance 4 sd)."""
    rng = np.random.default_rng(0)
    n, ratio, reps = 6, 3.0, 200
    cov = np.array([[ratio**2, rho * ratio], [rho * ratio, 1.0]])
    hits = 0
    for _ in range(reps):
        x = rng.multivariate_normal([0.0, 0.0], cov, size=n)
        lo, hi = pitman_morgan_interval(x[:, 0], x[:, 1], points=1201)
        hits += lo <= ratio <= hi
    assert abs(hits / reps - 0.95) < 4 * math.sqrt(0.95 * 0.05 / reps)


def test_f_interval_matches_the_textbook() -> None:
    # equal sds, n = 5 each: F(4, 4) quantiles 0.1041 and 9.6045
    lo, hi = f_interval(1.0, 1.0, 5, 5)
    assert lo == pytest.approx(math.sqrt(1 / 9.6045), rel=1e-3) and hi == pytest.approx(math.sqrt(9.6045), rel=1e-3)


@pytest.mark.slow
def test_run_dir_mode_reads_the_keyed_side_and_trains_stream_twins(tmp_path: Path) -> None:
    """--run-dir: uniform/cosine verify records (keyed) are read with their configs; the twin
    trains the same configs with init "stream"."""
    from analysis_fakes import record, write_run

    from tlmsearch.configs.presets import preset
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.training.trainer import train

    train_cfg = TrainConfig(steps=6, batch_size=4, eval_interval=6, eval_windows=4, warmup_steps=2, threads=1, seed=1)
    data = DataConfig(corpus="pydoc")
    rows = []
    for spec in ("uniform", "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5"):
        rec = record(f"v-{spec}", spec, 2.0, kind="verify", seed=1)
        model = preset("tiny").replace(n_layers=4).model_config("transformer", tuple(rec["widths"]))
        loss = train(model, train_cfg, data).metrics["val_loss"]
        rec["metrics"]["val_loss"] = loss
        rows.append({**rec, "model": model.to_dict(), "train": train_cfg.to_dict(), "data": data.to_dict()})
    stream_rec = {**rows[0], "trial_id": "v-stream", "seed": 2, "train": train_cfg.replace(init="stream").to_dict()}
    write_run(tmp_path / "run", [*rows, stream_rec])

    keyed = keyed_rows(tmp_path / "run")
    assert sorted((r["profile"], r["seed"]) for r in keyed) == [("cosine", 1), ("uniform", 1)]
    uni = next(r for r in keyed if r["profile"] == "uniform")
    twin = run_twin(uni)
    expected = train(
        preset("tiny").replace(n_layers=4).model_config("transformer", tuple(uni["widths"])),
        train_cfg.replace(init="stream"),
        data,
    ).metrics["val_loss"]
    assert twin["init"] == "stream" and twin["seed"] == 1 and twin["profile"] == "uniform"
    assert twin["val_loss"] == expected != uni["val_loss"]
