"""The common-random-numbers benchmark's analysis: pairing of trials, and the sd-ratio
intervals checked by simulation against a known truth."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.bench_crn import crn_summary, f_interval, paired_differences, pitman_morgan_interval


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
