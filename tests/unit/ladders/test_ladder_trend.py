"""The ladder's trend fit: the weighted line itself, its intervals, its extrapolation, its refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tlmsearch.ladders.trend import LadderPoint, Target, fit_trend


def _points(gains, ses, compute=(1e12, 1e13, 1e14), n=4):
    rows = zip(compute, gains, ses, strict=True)
    return [LadderPoint(point=f"p{i}", compute=c, gain=g, se=s, n=n) for i, (c, g, s) in enumerate(rows)]


def test_slope_is_the_weighted_least_squares_slope():
    gains, ses = [0.010, 0.020, 0.018], [0.004, 0.002, 0.001]
    fit = fit_trend(_points(gains, ses))
    x = np.log10([1e12, 1e13, 1e14])
    w = 1 / np.square(ses)
    design = np.stack([np.ones(3), x], 1)
    coef = np.linalg.solve(design.T @ (w[:, None] * design), design.T @ (w * gains))
    assert fit.slope.estimate == pytest.approx(coef[1], rel=1e-12)
    assert fit.at_largest.estimate == pytest.approx(coef[0] + coef[1] * 14, rel=1e-9)
    assert fit.n_points == 3 and fit.span == pytest.approx(100.0)
    assert fit.slope.low < fit.slope.estimate < fit.slope.high


def test_exact_line_with_small_noise_is_a_trend_and_constant_gain_is_not():
    rising = fit_trend(_points([0.00, 0.01, 0.02], [0.0005, 0.0005, 0.0005]))
    assert rising.shown and rising.slope.low > 0 and rising.dispersion == 1.0
    flat = fit_trend(_points([0.010, 0.0101, 0.0099], [0.003, 0.003, 0.003]))
    assert not flat.shown and flat.slope.low < 0 < flat.slope.high


def test_points_off_the_line_widen_the_interval():
    on = fit_trend(_points([0.00, 0.01, 0.02], [0.002, 0.002, 0.002]))
    off = fit_trend(_points([0.00, 0.03, 0.02], [0.002, 0.002, 0.002]))
    assert off.dispersion > 1.0
    assert (off.slope.high - off.slope.low) > (on.slope.high - on.slope.low)


def test_fewer_seeds_give_a_wider_interval_for_the_same_standard_errors():
    few = fit_trend(_points([0.0, 0.01, 0.02], [0.003] * 3, n=2))
    many = fit_trend(_points([0.0, 0.01, 0.02], [0.003] * 3, n=20))
    assert (few.slope.high - few.slope.low) > 1.5 * (many.slope.high - many.slope.low)


def test_seeded_and_deterministic():
    pts = _points([0.0, 0.01, 0.02], [0.003, 0.002, 0.004])
    assert fit_trend(pts) == fit_trend(pts)
    assert fit_trend(pts, seed=1).slope.high != fit_trend(pts, seed=2).slope.high


def test_extrapolation_states_its_reach_and_interval():
    pts = _points([0.0, 0.01, 0.02], [0.002, 0.002, 0.002])
    fit = fit_trend(pts, target=Target("440m", 1e18))
    ext = fit.extrapolation
    assert ext is not None
    assert ext.decades == pytest.approx(4.0)
    assert ext.log_gain.estimate == pytest.approx(0.0 + 0.01 * 6, abs=1e-9)
    assert ext.gain.estimate == pytest.approx(math.expm1(ext.log_gain.estimate))
    assert ext.log_gain.low < ext.log_gain.estimate < ext.log_gain.high
    # farther out, wider
    assert (ext.log_gain.high - ext.log_gain.low) > (fit.at_largest.high - fit.at_largest.low)
    assert "from 3 points over 100x of compute" in ext.reach
    assert "440m" in ext.reach and "4 decades" in ext.reach and "extrapolation" in ext.reach
    d = fit.to_dict()
    assert d["extrapolation"]["gain"]["low"] == ext.gain.low


def test_two_points_fit_without_dispersion():
    fit = fit_trend(_points([0.0, 0.01], [0.002, 0.002], compute=(1e12, 1e13)))
    assert fit.dispersion == 1.0 and fit.slope.estimate == pytest.approx(0.01)


@pytest.mark.parametrize(
    ("pts", "words"),
    [
        (_points([0.0], [0.1], compute=(1e12,)), "at least 2 points"),
        (_points([0.0, 0.1], [0.1, 0.1], n=1, compute=(1e12, 1e13)), "at least 2"),
        (_points([0.0, 0.1], [0.0, 0.1], compute=(1e12, 1e13)), "finite se > 0"),
        (_points([0.0, math.nan], [0.1, 0.1], compute=(1e12, 1e13)), "finite se > 0"),
        (_points([0.0, 0.1], [0.1, 0.1], compute=(1e12, 1e12)), "same compute"),
        (_points([0.0, 0.1], [0.1, 0.1], compute=(0.0, 1e12)), "must be positive"),
    ],
)
def test_refusals(pts, words):
    with pytest.raises(ValueError, match=words):
        fit_trend(pts)
