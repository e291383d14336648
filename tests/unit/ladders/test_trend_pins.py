"""`ladders/trend.py` pinned where its own tests left it free (issue 51): the level the
intervals carry, the interval at the largest point whatever the target, where a target lies,
the record of a target's size, and infinite ends in the headline."""

from __future__ import annotations

import math

import pytest

from tlmsearch.ladders.trend import LadderPoint, Target, fit_trend

COMPUTE = (1e12, 1e13, 1e14, 1e15)
GAINS = (0.0, 0.012, 0.018, 0.031)
SES = (0.002, 0.003, 0.002, 0.004)


def _points(k: int = 4, n: int = 4) -> list[LadderPoint]:
    rows = list(zip(COMPUTE, GAINS, SES, strict=True))[:k]
    return [LadderPoint(point=f"p{i}", compute=c, gain=g, se=s, n=n) for i, (c, g, s) in enumerate(rows)]


def test_a_point_without_size_records_none() -> None:
    p = _points()[0]
    assert math.isnan(p.params) and math.isnan(p.tokens_per_param) and p.df == 3


@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_every_interval_carries_one_minus_alpha(alpha: float) -> None:
    fit = fit_trend(_points(), alpha=alpha, target=Target("t", 1e16))
    assert fit.extrapolation is not None
    ext = fit.extrapolation
    for iv in (fit.slope, fit.at_largest, ext.log_gain, ext.gain):
        assert iv.confidence == pytest.approx(1 - alpha, abs=1e-15)


@pytest.mark.parametrize("n", [2, 4])
def test_the_largest_point_does_not_depend_on_the_target(n: int) -> None:
    # with 2 seeds a point the pivots set the critical values, and they differ between the
    # largest point (5.82 here) and a target 4 decades out (5.04): each interval takes its own
    alone = fit_trend(_points(n=n))
    far = fit_trend(_points(n=n), target=Target("far", 1e19))
    assert far.at_largest == alone.at_largest and far.slope == alone.slope
    assert far.extrapolation is not None
    # the target's own interval is wider (farther from the data) and centred on the line there
    assert (
        far.extrapolation.log_gain.high - far.extrapolation.log_gain.low > alone.at_largest.high - alone.at_largest.low
    )
    assert far.extrapolation.log_gain.estimate == pytest.approx(
        alone.at_largest.estimate + 4 * alone.slope.estimate, rel=1e-9
    )


@pytest.mark.parametrize(
    ("compute", "words"),
    [
        (1e17, "lies 2 decades of compute beyond the largest point: an extrapolation, not a measurement"),
        (3e12, "lies within the ladder's compute"),  # 12.5: inside the ladder (12 to 15)
        (1e15, "lies within the ladder's compute"),
        (1.1e15, "lies within the ladder's compute"),  # 0.041 decades beyond: within the 0.05 margin
    ],
)
def test_where_the_target_lies(compute: float, words: str) -> None:
    ext = fit_trend(_points(), target=Target("t", compute)).extrapolation
    assert ext is not None and ext.reach.endswith(words)


def test_a_target_below_the_ladder_says_how_far_below_the_largest_point() -> None:
    ext = fit_trend(_points(), target=Target("small", 1e11)).extrapolation
    assert ext is not None and ext.reach.endswith("lies 4 decades below the largest point")
    edge = fit_trend(_points(), target=Target("edge", 10**11.96)).extrapolation  # within 0.05 of the smallest
    assert edge is not None and edge.reach.endswith("lies within the ladder's compute")


def test_the_target_record_names_its_size_or_none() -> None:
    sized = fit_trend(_points(), target=Target("440m", 1e18, params=4.4e8, tokens_per_param=20.0, how="6ND"))
    d = sized.to_dict()["extrapolation"]
    assert (d["params"], d["tokens_per_param"], d["how"], d["compute"]) == (4.4e8, 20.0, "6ND", 1e18)
    bare = fit_trend(_points(), target=Target("t", 1e18)).to_dict()["extrapolation"]
    assert bare["params"] is None and bare["tokens_per_param"] is None


def test_two_points_extrapolate_with_unbounded_intervals() -> None:
    # slope 0.012 nats a decade from 1e12 to 1e13; at 1e18: 0.072 nats, expm1 = +7.47 %; the log
    # interval is (-inf, inf), so the perplexity gain's is (expm1(-inf), inf) = (-100 %, +inf)
    ext = fit_trend(_points(2), target=Target("440m", 1e18)).extrapolation
    assert ext is not None
    assert (
        ext.headline()
        == "extrapolated 5 decades of compute beyond the data to 440m: +7.5 % perplexity [-100.0 %, +inf] at 95 %"
    )


def test_a_depth_arm_by_hand() -> None:
    # 4, 8, 16 layers at one compute; gains 0, 0.01, 0.02: 0.01 nats per doubling, span 4x
    pts = [
        LadderPoint(point=f"d{i}", compute=1e15, gain=g, se=0.002, n=4, layers=layers)
        for i, (layers, g) in enumerate([(4, 0.0), (8, 0.01), (16, 0.02)])
    ]
    fit = fit_trend(pts, axis="depth")
    assert fit.slope.estimate == pytest.approx(0.01) and fit.span == pytest.approx(4.0)
    assert fit.unit == "nats per doubling of depth" and fit.reach() == "from 3 points over 4x of depth"
    d = fit.to_dict()
    assert d["axis"] == "depth" and "slope_per_decade" not in d
    assert fit_trend(_points()).unit == "nats per 10x of compute"
    assert fit_trend(_points()).to_dict()["slope_per_decade"] == fit_trend(_points()).slope.to_dict()
    with pytest.raises(ValueError, match="no compute target"):
        fit_trend(pts, axis="depth", target=Target("t", 1e18))
    with pytest.raises(ValueError, match="at least 2 different depths"):
        fit_trend([replace_layers(p, 8) for p in pts], axis="depth")
    with pytest.raises(ValueError, match="at least 2 different depths"):
        fit_trend([replace_layers(pts[0], 0), *pts[1:]], axis="depth")


def replace_layers(p: LadderPoint, layers: int) -> LadderPoint:
    import dataclasses

    return dataclasses.replace(p, layers=layers)


@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_alpha_outside_0_half_is_refused(alpha: float) -> None:
    with pytest.raises(ValueError, match=f"alpha={alpha} must lie in"):
        fit_trend(_points(), alpha=alpha)


def test_two_depths_and_a_compute_below_one_flop_are_enough() -> None:
    # two points at 4 and 8 layers: the line through them, 0.01 nats per doubling, over 2x of depth
    two = [
        LadderPoint(point="d4", compute=1e15, gain=0.0, se=0.002, n=4, layers=4),
        LadderPoint(point="d8", compute=1e15, gain=0.01, se=0.002, n=4, layers=8),
    ]
    fit = fit_trend(two, axis="depth")
    assert fit.slope.estimate == pytest.approx(0.01) and fit.span == pytest.approx(2.0)
    # three points at two depths are a trend too (refused only below two different depths)
    three = [*two, LadderPoint(point="d8b", compute=2e15, gain=0.012, se=0.002, n=4, layers=8)]
    assert fit_trend(three, axis="depth").n_points == 3
    # any positive compute is a compute: 0.5 and 5 FLOPs, 0.01 nats apart, are 0.01 nats per 10x
    small = [
        LadderPoint(point="a", compute=0.5, gain=0.0, se=0.002, n=4),
        LadderPoint(point="b", compute=5.0, gain=0.01, se=0.002, n=4),
    ]
    fit = fit_trend(small)
    assert fit.slope.estimate == pytest.approx(0.01) and fit.span == pytest.approx(10.0)
    with pytest.raises(ValueError, match="compute 0.0 FLOPs must be positive"):
        fit_trend([small[0], LadderPoint(point="b", compute=0.0, gain=0.01, se=0.002, n=4)])
