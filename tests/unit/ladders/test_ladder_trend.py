"""The ladder's trend fit: the random-effects line, its Hartung-Knapp intervals and p-value pinned
against an independent matrix computation, the rule on points and seeds, the extrapolation and
the refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tlmsearch.ladders.trend import LadderPoint, Target, fit_trend


def _points(gains, ses, compute=(1e12, 1e13, 1e14), n=4):
    rows = zip(compute, gains, ses, strict=True)
    return [LadderPoint(point=f"p{i}", compute=c, gain=g, se=s, n=n) for i, (c, g, s) in enumerate(rows)]


def _metafor_knha(x, y, se, x0):
    """An independent computation in matrix form, as metafor's rma(yi, vi, mods = x, method = "DL",
    test = "knha") writes it (plus the floor of q at one): P = W - W X (X'WX)^-1 X'W, Q_E = y'Py,
    tau^2 = max(0, (Q_E - (k - 2)) / tr P); W* = diag(1 / (v + tau^2)), beta = (X'W*X)^-1 X'W*y,
    q = r'W*r / (k - 2), Var beta = max(q, 1) (X'W*X)^-1, t on k - 2 df."""
    x, y, v = np.asarray(x, float), np.asarray(y, float), np.square(se)
    k = len(x)
    design = np.stack([np.ones(k), x], 1)
    w = np.diag(1 / v)
    proj = w - w @ design @ np.linalg.inv(design.T @ w @ design) @ design.T @ w
    tau2 = max(0.0, (y @ proj @ y - (k - 2)) / np.trace(proj))
    ws = np.diag(1 / (v + tau2))
    inv = np.linalg.inv(design.T @ ws @ design)
    beta = inv @ design.T @ ws @ y
    r = y - design @ beta
    q = r @ ws @ r / (k - 2)
    cov = max(q, 1.0) * inv
    crit = stats.t.ppf(0.975, k - 2)
    sb = math.sqrt(cov[1, 1])
    a = np.array([1.0, x0])
    at, sa = a @ beta, math.sqrt(a @ cov @ a)
    return {
        "tau2": tau2,
        "q": q,
        "slope": (beta[1], beta[1] - crit * sb, beta[1] + crit * sb),
        "p": 2 * stats.t.sf(abs(beta[1] / sb), k - 2),
        "at": (at, at - crit * sa, at + crit * sa),
    }


# four points, 50 paired seeds each (the seed-estimated se are as good as known, so the t
# interval is the wider one and the pivot adds nothing)
X4 = (12.0, 13.0, 14.0, 15.0)
FLAT_SCATTER = ([0.010, 0.030, 0.012, 0.035], [0.004, 0.003, 0.002, 0.003])  # q < 1 after tau^2: floored
OFF_LINE = ([0.000, 0.020, 0.005, 0.030], [0.002, 0.001, 0.004, 0.001])


def test_interval_and_p_match_an_independent_computation():
    pts = _points(*FLAT_SCATTER, compute=tuple(10**x for x in X4), n=50)
    fit = fit_trend(pts, target=Target("t", 1e17))
    ref = _metafor_knha(X4, *FLAT_SCATTER, 17.0)
    assert fit.tau**2 == pytest.approx(ref["tau2"], rel=1e-9)
    assert fit.dispersion == pytest.approx(ref["q"], rel=1e-9)
    assert (fit.slope.estimate, fit.slope.low, fit.slope.high) == pytest.approx(ref["slope"], rel=1e-9)
    assert fit.p_value == pytest.approx(ref["p"], rel=1e-9)
    ext = fit.extrapolation
    assert ext is not None
    assert (ext.log_gain.estimate, ext.log_gain.low, ext.log_gain.high) == pytest.approx(ref["at"], rel=1e-9)


def test_scattered_points_are_never_narrower_than_the_t_interval():
    """Points well off their line (q > 1 after tau^2): tau^2's own noise makes the pivot the
    wider of the two; the interval contains the t interval and p is at least t's."""
    pts = _points(*OFF_LINE, compute=tuple(10**x for x in X4), n=50)
    fit = fit_trend(pts, target=Target("t", 1e17))
    ref = _metafor_knha(X4, *OFF_LINE, 17.0)
    assert ref["q"] > 1.0 and ref["tau2"] > 0
    assert fit.tau**2 == pytest.approx(ref["tau2"], rel=1e-9)
    assert fit.slope.estimate == pytest.approx(ref["slope"][0], rel=1e-9)
    assert fit.slope.low <= ref["slope"][1] + 1e-15 and fit.slope.high >= ref["slope"][2] - 1e-15
    assert fit.p_value >= ref["p"] - 1e-12
    ext = fit.extrapolation
    assert ext is not None and ext.log_gain.low <= ref["at"][1] and ext.log_gain.high >= ref["at"][2]


def test_the_pinned_example_by_its_numbers():
    """The first example's figures, written out: DL tau^2 = 1.8e-4, q = 0.842 (floored at one),
    slope +0.005631 [-0.02102, +0.03228] nats per decade, p = 0.459 (t = 0.909 on 2 df)."""
    pts = _points(*FLAT_SCATTER, compute=tuple(10**x for x in X4), n=50)
    fit = fit_trend(pts, target=Target("t", 1e17))
    assert fit.tau**2 == pytest.approx(1.8e-4, rel=1e-6)
    assert fit.dispersion == pytest.approx(0.84183, rel=1e-4)
    assert fit.slope.estimate == pytest.approx(0.0056312, rel=1e-4)
    assert fit.slope.low == pytest.approx(-0.021022, rel=1e-4)
    assert fit.slope.high == pytest.approx(0.032284, rel=1e-4)
    assert fit.p_value == pytest.approx(0.45928, rel=1e-4)
    assert not fit.shown and not fit.descriptive


def test_the_committed_ladders_scatter_is_no_trend():
    """Cosine over uniform on the committed reference ladder (runs/reference/ladder: 9 paired
    seeds a point). The fit before issue 46 read its three points' scatter as a trend at p < 0.05
    (-0.0143 [-0.0272, -0.0014] nats per decade); the random-effects line on 1 df does not, and
    three points are descriptive anyway."""
    compute = (1.648361472e11, 1.996757139456e12, 1.6693699018752e13)
    gains = (-0.004244, 0.012611, -0.002793)
    ses = (0.026115, 0.0046494, 0.0016032)
    fit = fit_trend(_points(gains, ses, compute=compute, n=9), target=Target("440m", 2.32e19))
    assert fit.p_value > 0.2 and fit.slope.low < 0 < fit.slope.high
    assert fit.descriptive.startswith("descriptive only: 3 points") and not fit.shown
    ext = fit.extrapolation
    assert ext is not None and ext.far and ext.headline().startswith("extrapolated 6.1 decades of compute beyond")
    assert ext.gain.low < -0.3 and ext.gain.high > 0.5  # no sign at 440M from these points


def test_exact_line_with_small_noise_is_a_trend_from_four_points_only():
    rising4 = fit_trend(_points([0.00, 0.01, 0.02, 0.03], [0.0005] * 4, compute=(1e12, 1e13, 1e14, 1e15)))
    assert rising4.shown and rising4.slope.low > 0
    rising3 = fit_trend(_points([0.00, 0.01, 0.02], [0.0005] * 3))
    assert not rising3.shown and rising3.p_value < 0.05  # the test alone would call it; 3 points may not
    assert "3 points" in rising3.descriptive
    few_seeds = fit_trend(_points([0.00, 0.01, 0.02, 0.03], [0.0005] * 4, compute=(1e12, 1e13, 1e14, 1e15), n=3))
    assert not few_seeds.shown and "fewer than 4 paired seeds" in few_seeds.descriptive
    flat = fit_trend(_points([0.010, 0.0101, 0.0099, 0.01], [0.003] * 4, compute=(1e12, 1e13, 1e14, 1e15)))
    assert not flat.shown and flat.slope.low < 0 < flat.slope.high


def test_points_off_the_line_widen_the_interval():
    on = fit_trend(_points([0.00, 0.01, 0.02], [0.002, 0.002, 0.002]))
    off = fit_trend(_points([0.00, 0.03, 0.02], [0.002, 0.002, 0.002]))
    assert off.tau > 0 == on.tau
    assert (off.slope.high - off.slope.low) > (on.slope.high - on.slope.low)


def test_fewer_seeds_give_an_interval_at_least_as_wide_as_the_t_interval():
    few = fit_trend(_points([0.0, 0.01, 0.02, 0.03], [0.003] * 4, compute=(1e12, 1e13, 1e14, 1e15), n=2))
    many = fit_trend(_points([0.0, 0.01, 0.02, 0.03], [0.003] * 4, compute=(1e12, 1e13, 1e14, 1e15), n=200))
    assert (few.slope.high - few.slope.low) >= (many.slope.high - many.slope.low)


def test_seeded_and_deterministic():
    pts = _points([0.0, 0.01, 0.02], [0.003, 0.002, 0.004], n=2)
    assert fit_trend(pts) == fit_trend(pts)


def test_extrapolation_states_its_reach_and_interval():
    pts = _points([0.0, 0.01, 0.02], [0.002, 0.002, 0.002])
    fit = fit_trend(pts, target=Target("440m", 1e18))
    ext = fit.extrapolation
    assert ext is not None
    assert ext.decades == pytest.approx(4.0)
    assert ext.log_gain.estimate == pytest.approx(0.0 + 0.01 * 6, abs=1e-9)
    assert ext.gain.estimate == pytest.approx(math.expm1(ext.log_gain.estimate))
    assert ext.log_gain.low < ext.log_gain.estimate < ext.log_gain.high
    # farther out, wider; never narrower than the model's t interval there
    assert (ext.log_gain.high - ext.log_gain.low) > (fit.at_largest.high - fit.at_largest.low)
    assert "from 3 points over 100x of compute" in ext.reach
    assert "440m" in ext.reach and "4 decades" in ext.reach and "extrapolation" in ext.reach
    assert ext.headline().startswith("extrapolated 4 decades of compute beyond the data to 440m: ")
    near = fit_trend(pts, target=Target("near", 5e14)).extrapolation
    assert near is not None and not near.far and near.headline().startswith("at near: ")
    d = fit.to_dict()
    assert d["extrapolation"]["gain"]["low"] == ext.gain.low
    assert d["descriptive"] and d["df"] == 1


def test_two_points_give_a_line_without_an_interval():
    fit = fit_trend(_points([0.0, 0.01], [0.002, 0.002], compute=(1e12, 1e13)))
    assert fit.slope.estimate == pytest.approx(0.01)
    assert fit.slope.low == -math.inf and fit.slope.high == math.inf and math.isnan(fit.p_value)
    assert not fit.shown and fit.descriptive


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
