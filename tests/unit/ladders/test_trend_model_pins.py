"""Pins of the trend model's pieces (`ladders/trend_model.py`): tau^2's Q-profile upper end
against an independent root finder (numpy's weighted fit, scipy's brentq), its two edges (no
excess scatter: 0; more than the bracket: its top, 1 nat^2), the pivot p-value by hand, and the
pivots' shapes over a batch of ladders."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from tlmsearch.ladders.trend_model import pivot_p, pivots, tau2_upper

X = np.array([0.0, 1.0, 2.0, 3.0])


def q_of(x: np.ndarray, m: np.ndarray, v: np.ndarray, tau2: float) -> float:
    """Generalised Q of the weighted line at tau^2, by numpy's polyfit (weights on residuals: sqrt w)."""
    w = 1.0 / (v + tau2)
    slope, intercept = np.polyfit(x, m, 1, w=np.sqrt(w))
    return float((w * (m - intercept - slope * x) ** 2).sum())


def test_tau2_upper_is_where_q_meets_chi2_of_k_minus_2_at_ten_percent() -> None:
    m, v = np.array([0.0, 0.05, -0.03, 0.08]), np.full(4, 1e-4)
    c = stats.chi2.ppf(0.10, 2)
    want = optimize.brentq(lambda t: q_of(X, m, v, t) - c, 1e-12, 1.0, xtol=1e-15, rtol=1e-13)
    got = float(tau2_upper(X, m, v))
    assert got == pytest.approx(want, rel=1e-9)
    assert 1e-4 < got < 1e-1  # a real excess: not an edge of the bracket
    assert q_of(X, m, v, got) == pytest.approx(c, rel=1e-8)


def test_tau2_upper_of_points_on_a_line_is_zero() -> None:
    m, v = 0.01 + 0.02 * X, np.full(4, 1e-4)
    assert float(tau2_upper(X, m, v)) == 0.0


def test_tau2_upper_stops_at_the_top_of_its_bracket() -> None:
    # residuals of about a nat: Q stays above chi2(0.10) = 0.21 up to tau^2 of about 10, the bracket ends at 1
    m, v = np.array([0.0, 1.5, -1.0, 1.2]), np.full(4, 0.01)
    assert float(tau2_upper(X, m, v)) == pytest.approx(1.0, rel=1e-9)
    m2 = np.array([0.0, 0.3, -0.2, 0.25])  # a root between e^-1 and 1 nat^2
    want = optimize.brentq(lambda t: q_of(X, m2, v, t) - stats.chi2.ppf(0.10, 2), 1e-12, 1.0, xtol=1e-15)
    assert np.exp(-1) < want < 1.0
    assert float(tau2_upper(X, m2, v)) == pytest.approx(want, rel=1e-9)


def test_tau2_upper_over_a_batch_is_each_ladder_alone() -> None:
    m = np.array([[0.0, 0.05, -0.03, 0.08], [0.0, 0.3, -0.2, 0.25]])
    v = np.array([np.full(4, 1e-4), np.full(4, 0.01)])
    batch = tau2_upper(X, m, v)
    assert batch.shape == (2,)
    assert batch == pytest.approx([float(tau2_upper(X, m[i], v[i])) for i in range(2)], rel=1e-12)


def test_pivot_p_counts_draws_at_least_as_extreme_plus_one() -> None:
    piv = np.array([1.0, 2.0, 3.0])
    assert float(pivot_p(np.array(2.0), piv)) == pytest.approx(3 / 4)  # 2 of 3 draws >= 2, (1 + 2) / (3 + 1)
    assert float(pivot_p(np.array(5.0), piv)) == pytest.approx(1 / 4)  # none: never 0
    assert float(pivot_p(np.array(0.5), piv)) == pytest.approx(1.0)


def test_pivots_keep_the_batch_axes() -> None:
    v = np.full((2, 4), 1e-3)
    n = np.full(4, 6.0)  # the same seeds at every simulated ladder
    piv_b, piv_at = pivots(X, v, n, np.zeros(2), np.array([4.0, 5.0, 6.0]), 7, np.random.default_rng(0))
    assert piv_b.shape == (2, 7) and piv_at.shape == (2, 7, 3)
    assert np.all(piv_b >= 0) and np.all(np.isfinite(piv_at))
    # two identical ladders of the batch draw their own simulated ladders, not one set shared
    assert not np.allclose(piv_b[0], piv_b[1])
