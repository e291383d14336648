"""bench/bench_early_stopping.py: the comparison of an ASHA search with a search without early stopping."""

from __future__ import annotations

import math

import pytest

from bench import bench_early_stopping as es

T = es.Trial


def ground_truth() -> list[es.Trial]:
    """Eight profiles trained to 300 steps: p0 best, p7 worst."""
    return [T(key=f"p{i}", steps=300, full=True, val_loss=2.0 + 0.1 * i) for i in range(8)]


def test_same_profiles_asha_keeps_the_best() -> None:
    none = ground_truth()
    # ASHA stopped p3..p7 early (at 50 or 150 steps, partial losses), carried p0, p1, p2 to the end
    asha = [none[0], none[1], none[2]] + [
        T(key=f"p{i}", steps=50 if i % 2 else 150, full=False, val_loss=3.0) for i in range(3, 8)
    ]
    r = es.compare(none, asha)
    assert r["steps_none"] == 2400 and r["steps_asha"] == 900 + 2 * 150 + 3 * 50
    assert r["steps_ratio"] == pytest.approx(2400 / 1350)
    assert r["same_profiles"] and r["same_best"]
    assert r["top_overlap"] == 3 and r["true_rank_of_asha_best"] == 1
    assert r["regret"] == 0.0 and r["max_abs_diff_same_trial"] == 0.0
    assert r["full_fidelity"] == [8, 3] and r["true_ranks_of_asha_full"] == [1, 2, 3]


def test_same_profiles_asha_stopped_the_true_best() -> None:
    none = ground_truth()
    asha = (
        [T(key="p0", steps=50, full=False, val_loss=3.5)]
        + none[1:4]
        + [T(key=f"p{i}", steps=50, full=False, val_loss=3.0) for i in range(4, 8)]
    )
    r = es.compare(none, asha)
    assert not r["same_best"] and r["true_rank_of_asha_best"] == 2
    assert r["regret"] == pytest.approx(0.1) and r["regret_pct"] == pytest.approx(5.0)
    assert r["top_overlap"] == 3  # p1, p2, p3 of the true top 5 (p0..p4)
    assert r["true_ranks_of_asha_full"] == [2, 3, 4]


def test_different_profiles_compare_best_values_only() -> None:
    none = ground_truth()
    asha = [T(key=f"q{i}", steps=300 if i < 2 else 50, full=i < 2, val_loss=1.95 + 0.2 * i) for i in range(8)]
    r = es.compare(none, asha)
    assert not r["same_profiles"] and "same_best" not in r
    assert r["regret"] == pytest.approx(-0.05)


def test_top_ignores_stopped_and_nan_trials() -> None:
    trials = [T(key="a", steps=10, full=False, val_loss=1.0), T(key="b", steps=300, full=True, val_loss=math.nan),
              T(key="c", steps=300, full=True, val_loss=2.0)]  # fmt: skip
    assert [t.key for t in es.top(trials)] == ["c"]
