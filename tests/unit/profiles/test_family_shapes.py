"""The families' relative widths (before the budget projection) pinned to values worked out by
hand: the knots' monotone cubic and straight-line interpolants, their sorting modes, and the
bowtie's two half-cosine easings. Properties (monotone, positive, exact budget) are tested
elsewhere; these fix the numbers, so a changed weight, slope or easing shows here."""

from __future__ import annotations

import pytest

from tlmsearch.profiles.families import relative_widths

# 3 knots at depths 0, 1/2, 1 (h = 1/2), read at the 5 layers' depths 0, 1/4, 1/2, 3/4, 1. Halfway
# through a segment (t = 1/2) the Hermite weights are h00 = h01 = 1/2, h10 = 1/8, h11 = -1/8:
# value = (y_i + y_i+1) / 2 + h (d_i - d_i+1) / 8.


def _widths(family: str, n: int, **params: object) -> list[float]:
    return relative_widths(family, n, **params)


def test_pchip_through_decreasing_knots_takes_harmonic_mean_slopes() -> None:
    # knots 1, 0.5, 0.25: secants -1 and -0.5; end slopes the end secants (-1, -0.5); the middle
    # slope (3h) / (1.5h / -1 + 1.5h / -0.5) = -2/3. Layer 1: 0.75 + (1/2)(-1 + 2/3)/8 = 0.75 - 1/48;
    # layer 3: 0.375 + (1/2)(-2/3 + 1/2)/8 = 0.375 - 1/96.
    got = _widths("knots", 5, k0=1.0, k1=0.5, k2=0.25)
    assert got == pytest.approx([1.0, 0.75 - 1 / 48, 0.5, 0.375 - 1 / 96, 0.25], rel=1e-12)


def test_pchip_is_flat_at_an_interior_extremum_and_next_to_a_flat_segment() -> None:
    # knots 1, 0.5, 1: secants -1 and +1 disagree in sign, so the middle slope is 0; the end
    # slopes -1 and +1. Layer 1: 0.75 + (1/2)(-1 - 0)/8 = 0.6875, layer 3 the mirror image.
    assert _widths("knots", 5, k0=1.0, k1=0.5, k2=1.0) == pytest.approx([1.0, 0.6875, 0.5, 0.6875, 1.0], rel=1e-12)
    # knots 1, 1, 0.5: the first secant is 0, so both slopes of that segment are 0 (flat at 1);
    # the second segment: 0.75 + (1/2)(0 + 1)/8 = 0.8125
    assert _widths("knots", 5, k0=1.0, k1=1.0, k2=0.5) == pytest.approx([1.0, 1.0, 1.0, 0.8125, 0.5], rel=1e-12)


def test_pchip_scales_the_knots_by_the_largest() -> None:
    # the interpolant is linear in the knots, so knots 4, 2, 1 give the 1, 0.5, 0.25 shape
    assert _widths("knots", 5, k0=4.0, k1=2.0, k2=1.0) == pytest.approx(_widths("knots", 5, k0=1.0, k1=0.5, k2=0.25))


def test_straight_lines_between_knots_use_each_layers_own_segment() -> None:
    # knots 1, 0.25, 0.5 (not collinear): layer 1 halfway down the first segment, layer 3
    # halfway up the second
    got = _widths("knots", 5, k0=1.0, k1=0.25, k2=0.5, interp="linear")
    assert got == pytest.approx([1.0, 0.625, 0.25, 0.375, 0.5], rel=1e-12)
    # 4 knots at 0, 1/3, 2/3, 1, read at 7 layers (depths i/6): every other layer is a knot
    got = _widths("knots", 7, k0=1.0, k1=0.4, k2=0.6, k3=0.2, interp="linear")
    assert got == pytest.approx([1.0, 0.7, 0.4, 0.5, 0.6, 0.4, 0.2], rel=1e-12)


def test_the_sorting_modes_sort_the_knots_before_interpolating() -> None:
    decreasing = [1.0, 0.75 - 1 / 48, 0.5, 0.375 - 1 / 96, 0.25]
    for knots in ((0.25, 0.5, 1.0), (0.5, 0.25, 1.0), (1.0, 0.25, 0.5)):
        k = dict(zip(("k0", "k1", "k2"), knots, strict=True))
        assert _widths("knots", 5, **k, mode="decreasing") == pytest.approx(decreasing, rel=1e-12)
        assert _widths("knots", 5, **k, mode="increasing") == pytest.approx(decreasing[::-1], rel=1e-12)
    assert _widths("knots", 5, k0=0.25, k1=0.5, k2=1.0, mode="free") == pytest.approx(decreasing[::-1], rel=1e-12)


def test_the_bowtie_eases_down_to_its_bottleneck_and_back() -> None:
    # value 1 - (1 - ratio)(1 - cos(pi u)) / 2, u = x / position before the bottleneck and
    # (1 - x) / (1 - position) after it. ratio 0.5 at position 0.5: u = 0, 1/2, 1, 1/2, 0.
    assert _widths("bowtie", 5, ratio=0.5, position=0.5) == pytest.approx([1.0, 0.75, 0.5, 0.75, 1.0], rel=1e-12)
    # ratio 0.3 at position 0.75: u = 0, 1/3, 2/3, 1, then 0 at the last layer:
    # 1 - 0.7 (1 - 1/2) / 2 = 0.825, 1 - 0.7 (1 + 1/2) / 2 = 0.475, 0.3, 1
    assert _widths("bowtie", 5, ratio=0.3, position=0.75) == pytest.approx([1.0, 0.825, 0.475, 0.3, 1.0], rel=1e-12)
    # after the bottleneck: position 0.25, depths 0, 1/4, 1/2, 3/4, 1 give u = 0, 1, 2/3, 1/3, 0
    assert _widths("bowtie", 5, ratio=0.3, position=0.25) == pytest.approx([1.0, 0.3, 0.475, 0.825, 1.0], rel=1e-12)


def test_pchip_reads_each_layer_on_its_own_segment() -> None:
    # the same knots 1, 0.5, 0.25 (slopes -1, -2/3, -1/2) read at 6 layers, depths 0.2 apart:
    # t = 0.4 and 0.8 on the first segment, 0.2 and 0.6 on the second. At t = 0.4:
    # h00 = 1.8 x 0.36 = 0.648, h10 = 0.144, h01 = 0.352, h11 = -0.096, so
    # 0.648 - 0.144 / 2 + 0.352 / 2 + 0.096 / 3 = 0.784; the others alike.
    got = _widths("knots", 6, k0=1.0, k1=0.5, k2=0.25)
    assert got == pytest.approx([1.0, 0.784, 0.5786666666666667, 0.4393333333333333, 0.342, 0.25], rel=1e-12)


def test_the_named_defaults_are_the_papers_and_the_literatures() -> None:
    # linear and cosine default to the paper's 1.5 -> 0.5; at 3 layers the middle is the mean
    assert _widths("linear", 3) == pytest.approx([1.5, 1.0, 0.5], rel=1e-12)
    assert _widths("cosine", 3) == pytest.approx([1.5, 1.0, 0.5], rel=1e-12)
    # cosine at 4 layers: (1 - cos(pi / 3)) / 2 = 1/4 of the way down at depth 1/3
    assert _widths("cosine", 4) == pytest.approx([1.5, 1.25, 0.75, 0.5], rel=1e-12)


def test_a_shallow_sigmoid_keeps_its_curvature() -> None:
    # steepness 0.002, midpoint 0: the two sigmoids differ by under 1e-3, so the step is taken
    # in closed form, tanh(k x / 2) / tanh(k / 2); at x = 1/2 that is 0.5 (1 + (1e-6 - 2.5e-7) / 3)
    # = 0.500000125 to 1e-13 (tanh u = u - u^3 / 3 + ...), not the straight line's 0.5
    got = _widths("sigmoid", 3, steepness=0.002, midpoint=0.0)
    assert got[1] == pytest.approx(1.5 - 0.500000125, abs=1e-12)
    assert got[0] == 1.5 and got[2] == 0.5


def test_the_literatures_defaults() -> None:
    # OpenELM's scaling 0.5 -> 4 and its reverse, straight lines: at 8 layers steps of 0.5
    assert _widths("openelm", 8) == pytest.approx([0.5 + 0.5 * i for i in range(8)], rel=1e-12)
    assert _widths("reverse", 8) == pytest.approx([4.0 - 0.5 * i for i in range(8)], rel=1e-12)
    # the bump: centre 0.5, width 0.2, amplitude 1: 1 + exp(-(x - 0.5)^2 / 0.08); at x = 0.25,
    # exp(-0.78125) = 0.45783336
    assert _widths("bump", 5) == pytest.approx([1 + 0.04393693362340742, 1.4578333617716143, 2.0,
                                                1.4578333617716143, 1 + 0.04393693362340742], rel=1e-9)  # fmt: skip
    # the sigmoid: steepness 10 about the middle, from 1.5 to 0.5; at x = 1/4 the step is
    # (sig(-2.5) - sig(-5)) / (sig(5) - sig(-5)) = (0.0758582 - 0.0066929) / 0.9866143 = 0.0701037
    got = _widths("sigmoid", 5)
    assert got[1] == pytest.approx(1.5 - 0.0701037, abs=1e-7) and got[2] == pytest.approx(1.0, rel=1e-12)
    # the framed line: OpenELM's, its first and last layer at 4
    assert _widths("frame", 8) == pytest.approx([4.0, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0], rel=1e-12)
    # the crown: 0.5 up to 4 at the central layer and down again, the first and last layer framed
    # at 4; at 7 layers the steps are 3.5 / 3
    assert _widths("crown", 7) == pytest.approx([4.0, 0.5 + 3.5 / 3, 0.5 + 7 / 3, 4.0, 0.5 + 7 / 3, 0.5 + 3.5 / 3, 4.0])


def test_a_steep_sigmoid_is_a_step_without_overflow() -> None:
    # steepness 1e4 about depth 0.3: the logistic of -3000 is 0 to double precision (never
    # exp(3000)), so the layers before 0.3 take start and those after take end
    assert _widths("sigmoid", 5, steepness=1e4, midpoint=0.3) == [1.5, 1.5, 0.5, 0.5, 0.5]
    # a layer at the midpoint sits halfway however steep the step (the logistic of 0 is 1/2)
    assert _widths("sigmoid", 5, steepness=2000.0, midpoint=0.5) == [1.5, 1.5, 1.0, 0.5, 0.5]


def test_an_unknown_parameter_is_named_with_the_allowed_ones() -> None:
    from tlmsearch.errors import ConfigError

    knots = r"^family 'knots' has no parameter 'q'; allowed: mode, interp, k0, k1, \.\.\.$"
    with pytest.raises(ConfigError, match=knots):
        _widths("knots", 4, k0=1.0, k1=0.5, q=1.0)
    with pytest.raises(ConfigError, match=r"^family 'linear' has no parameter 'k0'; allowed: start, end$"):
        _widths("linear", 4, k0=1.0)
    with pytest.raises(ConfigError, match=r"^family 'uniform' has no parameter 'x'; allowed: none$"):
        _widths("uniform", 4, x=1.0)
