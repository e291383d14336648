"""`analysis/decision.py` pinned by hand (issue 51): Holm's order and adjusted p-values, the
one-sided p-values and bounds at their edges (no spread, too few seeds), the level at which a
p-value rejects, and the bootstrap path's strict bounds.

With one degree of freedom the t distribution is Cauchy: P(T > t) = 1/2 - atan(t)/pi and its
quantile is tan(pi (p - 1/2)), so the values below are computable by hand.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from tlmsearch.analysis.decision import (
    OUTCOMES,
    bounds,
    check_levels,
    decide,
    decide_from_bounds,
    holm,
    log_margin,
    p_values,
    summarise,
)
from tlmsearch.errors import ConfigError

DELTA = math.log1p(0.01)


def cauchy_sf(t: float) -> float:
    return 0.5 - math.atan(t) / math.pi


def cauchy_quantile(p: float) -> float:
    return math.tan(math.pi * (p - 0.5))


# ----------------------------------------------------------------------------- Holm


def test_holm_steps_down_in_the_order_of_the_p_values() -> None:
    # sorted: 0.01 (x4) = 0.04, 0.02 (x3) = 0.06, 0.03 (x2) = 0.06, 0.04 (x1) -> 0.06 by monotonicity
    np.testing.assert_allclose(holm([0.04, 0.01, 0.03, 0.02]), [0.06, 0.04, 0.06, 0.06], rtol=1e-12)
    # capped at 1; a later smaller product is raised to the running maximum
    np.testing.assert_allclose(holm([0.7, 0.6]), [1.0, 1.0])
    np.testing.assert_allclose(holm([0.6, 0.2]), [0.6, 0.4], rtol=1e-12)
    np.testing.assert_allclose(holm([0.3]), [0.3])
    # ties: both take the larger step
    np.testing.assert_allclose(holm([0.02, 0.02, 0.5]), [0.06, 0.06, 0.5], rtol=1e-12)


def test_holm_shows_more_candidates_better_than_bonferroni() -> None:
    # two candidates, both t = 9 on 1 df: p = 1/2 - atan(9)/pi = 0.0352 each. Bonferroni (alpha/2 =
    # 0.025) rejects neither; Holm adjusts both to 2 x 0.0352 = 0.0704: neither either. One at t = 30
    # (p = 0.0106, x2 = 0.0212) and one at t = 9: Holm rejects the first at alpha/2 and then the
    # second at alpha (0.0352 <= 0.05), where Bonferroni would reject only the first.
    out = decide([[0.30, 0.09]], [[0.01, 0.01]], [[1.0, 1.0]], margin=0.01, alpha=0.05)
    p9, p30 = cauchy_sf(9.0), cauchy_sf(30.0)
    np.testing.assert_allclose(out["p_better"][0], [2 * p30, p9], rtol=1e-9)
    assert out["shown_better"][0].tolist() == [True, True]
    assert OUTCOMES[int(out["outcome"][0])] == "better"
    # the Bonferroni bounds at 1 - alpha/2 = 0.975: 0.30 - 0.01 tan(0.475 pi) > 0 > 0.09 - 0.01 tan(...)
    q = cauchy_quantile(0.975)
    np.testing.assert_allclose(out["low"][0], [0.30 - 0.01 * q, 0.09 - 0.01 * q], rtol=1e-9)
    np.testing.assert_allclose(out["high"][0], [0.30 + 0.01 * q, 0.09 + 0.01 * q], rtol=1e-9)


# ----------------------------------------------------------------------------- p-values and bounds


def test_p_values_by_hand_on_one_degree_of_freedom() -> None:
    assert p_values(0.02, 0.01, 1.0, 0.0, "greater") == pytest.approx(cauchy_sf(2.0), rel=1e-12)
    assert p_values(0.02, 0.01, 1.0, 0.0, "less") == pytest.approx(1 - cauchy_sf(2.0), rel=1e-12)
    assert p_values(0.0, 0.01, 1.0, 0.03, "less") == pytest.approx(cauchy_sf(3.0), rel=1e-12)


def test_p_values_at_their_edges() -> None:
    # no spread: the sign decides; no spread and no difference: undefined, p = 1
    assert p_values([0.01, -0.01, 0.0], 0.0, 4.0, 0.0, "greater").tolist() == [0.0, 1.0, 1.0]
    assert p_values([0.01, -0.01, 0.0], 0.0, 4.0, 0.0, "less").tolist() == [1.0, 0.0, 1.0]
    # fewer than 2 seeds (df < 1) or no standard error: p = 1 whatever the mean
    assert p_values([5.0, 5.0, 5.0], [0.1, np.nan, np.inf], [0.5, 4.0, 4.0], 0.0, "greater").tolist() == [1.0] * 3
    # df = 1 is a test (the smallest one)
    assert p_values(5.0, 0.1, 1.0, 0.0, "greater") == pytest.approx(cauchy_sf(50.0), rel=1e-12)


def test_bounds_by_hand_and_at_their_edges() -> None:
    q = cauchy_quantile(0.975)
    low, high = bounds([0.1, 0.1, 0.1, 0.1, 0.1], [0.02, 0.0, 0.0, 0.02, np.nan], [1.0, 4.0, 0.0, 0.5, 4.0], 0.975)
    np.testing.assert_allclose(low, [0.1 - 0.02 * q, 0.1, -np.inf, -np.inf, -np.inf], rtol=1e-12)
    np.testing.assert_allclose(high, [0.1 + 0.02 * q, 0.1, np.inf, np.inf, np.inf], rtol=1e-12)


def test_summarise_by_hand() -> None:
    mean, se, df = summarise([[0.01, 0.03, 0.05], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(mean, [0.03, 1.0])
    np.testing.assert_allclose(se, [0.02 / math.sqrt(3), 0.0], atol=1e-15)
    assert df.tolist() == [2.0, 2.0]


def test_one_seed_is_summarised_without_spread_or_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mean, se, df = summarise([[0.2], [0.4]])
    assert mean.tolist() == [0.2, 0.4] and np.isnan(se).all() and df.tolist() == [0.0, 0.0]


# ----------------------------------------------------------------------------- the level


def test_a_p_value_equal_to_alpha_rejects() -> None:
    # Holm rejects at adjusted p <= alpha: take alpha to be the p-value itself
    mean, se, df = [[0.004, 0.002]], [[0.002, 0.002]], [[3.0, 3.0]]
    p_better = holm(p_values(mean, se, df, 0.0, "greater"))[0]
    p_within = holm(p_values(mean, se, df, DELTA, "less"))[0]
    at = float(p_better.min())
    out = decide(mean, se, df, margin=0.01, alpha=at)
    assert out["shown_better"][0].tolist() == (p_better <= at).tolist() == [True, False]
    at = float(p_within.max())
    out = decide(mean, se, df, margin=0.01, alpha=at)
    assert out["within_margin"][0].tolist() == [True, True]
    assert OUTCOMES[int(out["outcome"][0])] == "near_optimal"


@pytest.mark.parametrize(
    ("margin", "alpha", "message"),
    [
        (1.0, 0.05, "margin=1.0 must lie in"),
        (0.0, 0.05, "margin=0.0 must lie in"),
        ("0.01", 0.05, "margin=0.01 must lie in"),
        (0.01, 0.5, "alpha=0.5 must lie in"),
        (0.01, 0.0, "alpha=0.0 must lie in"),
        (0.01, None, "alpha=None must lie in"),
    ],
)
def test_levels_are_refused_outside_their_ranges(margin: object, alpha: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_levels(margin, alpha)  # type: ignore[arg-type]


def test_levels_just_inside_their_ranges_are_accepted() -> None:
    check_levels(0.999, 0.499)
    check_levels(1e-9, 1e-9)
    assert log_margin(0.01) == math.log1p(0.01)


# ----------------------------------------------------------------------------- the bootstrap path


def test_decision_from_bounds_is_strict_at_0_and_at_the_margin() -> None:
    low = [[0.0, -0.01], [1e-12, -0.01], [-0.01, -0.01]]
    high = [[0.005, 0.005], [0.02, 0.005], [DELTA, 0.005]]
    out = decide_from_bounds(low, high, margin=0.01)
    # a lower bound of exactly 0 shows nothing; an upper bound exactly on the margin is not within it
    assert out["shown_better"].tolist() == [[False, False], [True, False], [False, False]]
    assert out["within_margin"].tolist() == [[True, True], [False, True], [False, True]]
    assert [OUTCOMES[int(k)] for k in out["outcome"]] == ["near_optimal", "better", "inconclusive"]
    assert out["all_within"].tolist() == [True, False, False]
    assert np.isnan(out["p_better"]).all() and np.isnan(out["p_within"]).all()
    np.testing.assert_array_equal(out["low"], low)
    np.testing.assert_array_equal(out["high"], high)
