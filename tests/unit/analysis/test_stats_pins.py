"""`analysis/stats.py` pinned to values worked out by hand or by an independent computation
(issue 51): interval ends, the checks on confidence and p, bootstrap of data with no spread,
Spearman with two distinct values, `covers()` at both ends.

The t quantiles with 1 and 2 degrees of freedom have closed forms: tan(pi (p - 1/2)) and
(2p - 1) / sqrt(2 p (1 - p)).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats as sp

from tlmsearch.analysis.stats import (
    MIN_RANK_POINTS,
    Interval,
    _spearman_rows,
    bootstrap_ci,
    interval,
    mean_ci,
    paired,
    paired_difference,
    paired_ratio,
    rank_correlation,
    spearman,
    t_quantile,
)
from tlmsearch.errors import ConfigError


def t1(p: float) -> float:
    return math.tan(math.pi * (p - 0.5))


def t2(p: float) -> float:
    return (2 * p - 1) / math.sqrt(2 * p * (1 - p))


def test_t_quantile_closed_forms_and_refusals() -> None:
    assert t_quantile(0.975, 1) == pytest.approx(t1(0.975), rel=1e-9)  # 12.7062
    assert t_quantile(0.975, 2) == pytest.approx(t2(0.975), rel=1e-9)  # 4.3027
    assert t_quantile(0.05, 2) == pytest.approx(t2(0.05), rel=1e-9)  # negative below 1/2
    for p in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match=f"p={p} must lie in"):
            t_quantile(p, 3)


def test_mean_ci_ends_by_hand() -> None:
    iv = mean_ci([1.0, 2.0, 3.0], confidence=0.9)  # mean 2, sd 1, sem 1/sqrt(3), t(0.95, 2)
    half = t2(0.95) / math.sqrt(3)
    assert (iv.estimate, iv.n, iv.confidence) == (2.0, 3, 0.9)
    assert iv.low == pytest.approx(2.0 - half, abs=1e-12)
    assert iv.high == pytest.approx(2.0 + half, abs=1e-12)
    two = mean_ci([1.0, 4.0])  # mean 2.5, sd 3/sqrt(2), sem 1.5, t(0.975, 1)
    assert (two.low, two.high) == (pytest.approx(2.5 - 1.5 * t1(0.975)), pytest.approx(2.5 + 1.5 * t1(0.975)))


def test_mean_ci_with_one_value_is_unbounded_and_keeps_n_and_level() -> None:
    assert mean_ci([5.0], confidence=0.8) == Interval(5.0, -math.inf, math.inf, 1, 0.8)


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5])
def test_mean_ci_refuses_a_confidence_outside_0_1(confidence: float) -> None:
    with pytest.raises(ValueError, match=f"confidence={confidence} must lie in"):
        mean_ci([1.0, 2.0], confidence)


def test_mean_ci_refuses_no_values() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        mean_ci([])


def test_bootstrap_of_values_with_no_spread_is_the_value_itself() -> None:
    assert bootstrap_ci([0.25] * 20) == Interval(0.25, 0.25, 0.25, 20, 0.95)
    assert bootstrap_ci([-3.0] * 4, confidence=0.9, min_n=4) == Interval(-3.0, -3.0, -3.0, 4, 0.9)
    assert bootstrap_ci([2.0] * 20, statistic=np.median) == Interval(2.0, 2.0, 2.0, 20, 0.95)


def test_bootstrap_is_scipys_bca_with_9999_resamples_and_seed_0_by_default() -> None:
    xs = [math.sin(1.7 * i) + 0.3 for i in range(20)]  # no ties: the interval moves with every resample
    ci = sp.bootstrap(
        (np.asarray(xs),), np.mean, confidence_level=0.95, n_resamples=9999, method="BCa", rng=np.random.default_rng(0)
    ).confidence_interval
    assert bootstrap_ci(xs) == Interval(float(np.mean(xs)), float(ci.low), float(ci.high), 20, 0.95)
    assert interval(xs, method="bootstrap") == bootstrap_ci(xs)
    assert bootstrap_ci(xs, seed=1) != bootstrap_ci(xs)
    assert bootstrap_ci(xs, n_resamples=10_000) != bootstrap_ci(xs) != bootstrap_ci(xs, n_resamples=9998)


def test_bootstrap_refuses_fewer_values_than_its_minimum() -> None:
    with pytest.raises(ConfigError, match=r"at least 5 values \(got 4\)"):
        bootstrap_ci([1.0, 2.0, 3.0, 4.0], min_n=5)
    assert bootstrap_ci([1.0, 2.0, 3.0, 4.0, 6.0], min_n=5).n == 5


def test_paired_values_in_seed_order() -> None:
    assert paired({3: 1.0, 1: 2.0, 2: 0.5}, {2: 5.0, 3: 6.0, 9: 7.0}) == ([2, 3], [0.5, 1.0], [5.0, 6.0])


def test_paired_ratio_interval_by_hand() -> None:
    # ratios - 1: [0.1, 0.2]; mean 0.15, sd 0.1/sqrt(2), sem 0.05, t(0.975, 1)
    iv = paired_ratio({0: 11.0, 1: 24.0, 5: 1.0}, {0: 10.0, 1: 20.0})
    assert iv.n == 2 and iv.estimate == pytest.approx(0.15)
    assert iv.low == pytest.approx(0.15 - 0.05 * t1(0.975), rel=1e-9)
    assert iv.high == pytest.approx(0.15 + 0.05 * t1(0.975), rel=1e-9)


@pytest.mark.parametrize("pair", [paired_difference, paired_ratio])
def test_pairing_without_common_seeds_is_refused(pair: object) -> None:
    with pytest.raises(ValueError, match="no common seeds"):
        pair({0: 1.0}, {1: 1.0})  # type: ignore[operator]


def test_interval_refuses_an_unknown_method() -> None:
    with pytest.raises(ConfigError, match="method"):
        interval([1.0, 2.0], method="normal")


def test_covers_includes_both_ends() -> None:
    iv = Interval(0.5, -1.0, 2.0, 3)
    assert iv.covers(2.0) and iv.covers(-1.0) and iv.covers(0.5)
    assert not iv.covers(math.nextafter(2.0, 3.0)) and not iv.covers(math.nextafter(-1.0, -2.0))
    assert str(iv) == "+0.5 [-1, +2]"
    assert iv.to_dict() == {"estimate": 0.5, "low": -1.0, "high": 2.0, "n": 3, "confidence": 0.95}
    with pytest.raises(dataclasses.FrozenInstanceError):
        iv.low = 0.0  # type: ignore[misc]


def test_spearman_with_two_distinct_values() -> None:
    # ranks [1.5, 1.5, 3.5, 3.5] and [1, 2, 3, 4]; centred [-1, -1, 1, 1] and [-1.5, -0.5, 0.5, 1.5]:
    # 4 / sqrt(4 * 5)
    assert spearman([1, 1, 2, 2], [1, 2, 3, 4]) == pytest.approx(4 / math.sqrt(20), rel=1e-12)
    assert spearman([1.0, 2.0], [5.0, 3.0]) == pytest.approx(-1.0)  # two points
    assert math.isnan(spearman([1.0], [2.0]))
    assert math.isnan(spearman([1, 2, 3], [4, 4, 4]))
    with pytest.raises(ValueError, match="equal lengths, got 3 and 2"):
        spearman([1, 2, 3], [1, 2])


def test_rank_rows_by_hand() -> None:
    x = np.array([[1.0, 2.0], [1.0, 1.0], [1.0, 2.0], [1.0, 1.0]])
    y = np.array([[3.0, 4.0], [3.0, 4.0], [4.0, 3.0], [2.0, 2.0]])
    # two points: +1 and -1 (the product of the centred ranks, 0.5, is under 1); a constant row: 0
    assert _spearman_rows(x, y).tolist() == [1.0, 0.0, -1.0, 0.0]
    xs = np.array([[1.0, 1.0, 2.0, 2.0]])
    assert _spearman_rows(xs, np.array([[1.0, 2.0, 3.0, 4.0]]))[0] == pytest.approx(4 / math.sqrt(20))


def test_rank_rows_are_scipys_spearman_row_by_row() -> None:
    rng = np.random.default_rng(4)
    x, y = rng.integers(0, 5, (200, 10)).astype(float), rng.normal(size=(200, 10))
    x[0] = 2.0  # a constant row: 0 (no association) where scipy has no value
    expected = [0.0] + [sp.spearmanr(a, b).statistic for a, b in zip(x[1:], y[1:], strict=True)]
    np.testing.assert_allclose(_spearman_rows(x, y), expected, rtol=0, atol=1e-12)


def test_rank_correlation_is_a_bca_interval_of_pairs_with_9999_resamples_and_seed_0() -> None:
    x = [float(i) for i in range(MIN_RANK_POINTS)]
    y = [math.sin(2.3 * i) + 0.1 * i for i in range(MIN_RANK_POINTS)]
    rc = rank_correlation(x, y)
    # the rows' statistic is checked against scipy above; here: pairs resampled, BCa, 9999, seed 0
    ci = sp.bootstrap(
        (np.asarray(x), np.asarray(y)),
        _spearman_rows,
        paired=True,
        vectorized=True,
        confidence_level=0.95,
        n_resamples=9999,
        method="BCa",
        rng=np.random.default_rng(0),
    ).confidence_interval
    assert rc.rho == pytest.approx(sp.spearmanr(x, y).statistic, rel=1e-12)
    assert rc.n == 10 and rc.interval is not None
    assert rc.interval.low == float(ci.low)
    assert rc.interval.high == float(ci.high)
    assert rank_correlation(x, y, n_resamples=10_000).interval != rc.interval  # the data tell 9999 apart
    few = rank_correlation(x[:9], y[:9])
    assert few.interval is None and few.n == 9 and few.rho == pytest.approx(sp.spearmanr(x[:9], y[:9]).statistic)


def test_rank_correlation_with_no_ranks_has_no_rho_in_its_record() -> None:
    rc = rank_correlation([1.0] * 12, [float(i) for i in range(12)])
    assert math.isnan(rc.rho) and rc.interval is None
    assert rc.to_dict() == {"rho": None, "n": 12, "interval": None}
