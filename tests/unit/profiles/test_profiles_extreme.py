"""Profile maths at the edges of float64: no overflow, the right scale, the shape kept.

The projection is scale-free (only ratios of relative widths matter), so it must give the same
profile whether the relative widths are near 1, near 1e-308 or near 1e308, and no family may
overflow or silently flatten for any finite parameter in its allowed range.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tlmsearch.errors import ConfigError
from tlmsearch.profiles import Budget, ProfileSpec, profile, project_to_budget, relative_widths

BIG = 1.7976931348623157e308
positive = st.floats(min_value=5e-324, max_value=BIG, allow_nan=False, allow_infinity=False)
any_finite = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def budgets(draw: st.DrawFn) -> Budget:
    n = draw(st.integers(1, 40))
    multiple = draw(st.sampled_from([1, 8, 64, 256]))
    base = multiple * draw(st.integers(1, 64))
    lo = draw(st.one_of(st.none(), st.integers(1, base)))
    hi = draw(st.one_of(st.none(), st.integers(base, 4 * base)))
    return Budget(n, base, multiple_of=multiple, min_width=lo, max_width=hi)


def assert_on_budget(widths: tuple[int, ...], budget: Budget) -> None:
    assert len(widths) == budget.n_layers
    assert all(type(w) is int and w % budget.multiple_of == 0 and budget.lo <= w <= budget.hi for w in widths)
    assert sum(widths) == budget.total


def assert_order_kept(raw: list[float], widths: tuple[int, ...]) -> None:
    """A layer with a larger raw width never ends narrower than one with a smaller raw width."""
    for i, (ri, wi) in enumerate(zip(raw, widths, strict=True)):
        for rj, wj in zip(raw[i + 1 :], widths[i + 1 :], strict=True):
            if ri > rj:
                assert wi >= wj
            elif rj > ri:
                assert wj >= wi


@settings(max_examples=300, deadline=None)
@given(data=st.data())
@pytest.mark.slow
def test_projection_of_extreme_raw_widths(data: st.DataObject) -> None:
    budget = data.draw(budgets())
    raw = data.draw(st.lists(st.one_of(positive, st.just(0.0)), min_size=budget.n_layers, max_size=budget.n_layers))
    assume(any(r > 0 for r in raw))
    widths = project_to_budget(raw, budget)
    assert_on_budget(widths, budget)
    assert project_to_budget(widths, budget) == widths  # idempotent
    assert project_to_budget(raw, budget) == widths  # deterministic
    assert_order_kept(raw, widths)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
@pytest.mark.slow
def test_projection_ignores_the_scale(data: st.DataObject) -> None:
    """Relative widths times 2**k (exact in floats) give the same profile, up to one multiple
    where a rounding tie falls differently, for k anywhere in float64's range."""
    budget = data.draw(budgets())
    raw = data.draw(st.lists(st.floats(1e-3, 1e3), min_size=budget.n_layers, max_size=budget.n_layers))
    k = data.draw(st.integers(-1000, 1000))
    scaled = [math.ldexp(r, k) for r in raw]
    a, b = project_to_budget(raw, budget), project_to_budget(scaled, budget)
    assert_on_budget(b, budget)
    assert all(abs(x - y) <= budget.multiple_of for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("scale", [1e-300, 1e-100, 1.0, 1e100, 1e300])
def test_the_same_profile_at_every_scale(scale: float) -> None:
    budget = Budget(8, 512, multiple_of=32)
    reference = profile("cosine", budget, start=1.5, end=0.5)
    assert profile("cosine", budget, start=1.5 * scale, end=0.5 * scale) == reference
    assert profile("knots", budget, k0=3 * scale, k1=scale, interp="linear") == profile(
        "knots", budget, k0=3, k1=1, interp="linear"
    )


def test_issue_cases_give_the_right_shapes() -> None:
    budget = Budget(8, 64)
    # used to be uniform: the bisection could not reach a scale of 1e-68
    cos = profile("cosine", budget, start=1e70, end=1e69)
    assert cos == profile("cosine", budget, start=10.0, end=1.0)
    assert cos[0] > cos[-1] and sorted(cos, reverse=True) == list(cos)
    # used to be [73, ..., 73, 1]: a straight line from 1e308 down to (nearly) zero
    knots = profile("knots", budget, k0=1e308, k1=1e-308, interp="linear")
    assert knots == (128, 110, 91, 73, 55, 36, 18, 1)
    # used to overflow
    assert profile("power", budget, exponent=1000) == (505, 1, 1, 1, 1, 1, 1, 1)
    assert profile("power", budget, exponent=-1e300) == (1, 1, 1, 1, 1, 1, 1, 505)
    assert profile("sigmoid", budget, steepness=1e6) == (96, 96, 96, 96, 32, 32, 32, 32)
    # a needle: only the layer exactly at the centre is doubled (576 = 2x + 8x, x = 57.6)
    assert profile("bump", Budget(9, 64), width=1e-300, amplitude=1.0) == (58, 58, 58, 58, 115, 58, 57, 57, 57)


def test_a_shallow_sigmoid_is_the_straight_line() -> None:
    budget = Budget(12, 256)
    line = profile("linear", budget, start=1.5, end=0.5)
    for k in (1e-300, 1e-12, 1e-6):
        assert profile("sigmoid", budget, start=1.5, end=0.5, steepness=k, midpoint=0.3) == line
    # and continuous across the switch from the direct formula to the log-space one
    rel = [relative_widths("sigmoid", 12, steepness=k, midpoint=0.3) for k in (0.00799, 0.00801)]
    assert all(a == pytest.approx(b, rel=1e-4) for a, b in zip(*rel, strict=True))


family_params = {
    "cosine": st.fixed_dictionaries({"start": positive, "end": positive}),
    "linear": st.fixed_dictionaries({"start": positive, "end": positive}),
    "openelm": st.fixed_dictionaries({"start": positive, "end": positive}),
    "sigmoid": st.fixed_dictionaries(
        {"start": positive, "end": positive, "steepness": positive, "midpoint": st.floats(0, 1)}
    ),
    "power": st.fixed_dictionaries({"exponent": any_finite}),
    "groups": st.fixed_dictionaries({"third": st.sampled_from(["early", "middle", "late"]), "factor": positive}),
    "bump": st.fixed_dictionaries(
        {"centre": any_finite, "width": positive, "amplitude": st.floats(-1, BIG, exclude_min=True)}
    ),
    "knots": st.lists(positive, min_size=1, max_size=6).map(lambda ks: {f"k{i}": k for i, k in enumerate(ks)}),
}


@pytest.mark.parametrize("family", list(family_params))
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_every_family_is_finite_for_any_allowed_parameter(family: str, data: st.DataObject) -> None:
    budget = data.draw(budgets())
    params = data.draw(family_params[family])
    rel = relative_widths(family, budget.n_layers, **params)
    assert all(math.isfinite(r) and r >= 0 for r in rel) and any(r > 0 for r in rel)
    widths = profile(family, budget, **params)
    assert_on_budget(widths, budget)
    assert_order_kept(rel, widths)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_free_logits_of_any_size(data: st.DataObject) -> None:
    budget = data.draw(budgets())
    logits = {f"l{i}": data.draw(any_finite) for i in range(budget.n_layers)}
    assert_on_budget(profile("free", budget, **logits), budget)


@settings(max_examples=100, deadline=None)
@given(start=positive, end=positive)
def test_tapers_stay_tapers(start: float, end: float) -> None:
    """A decreasing family gives non-increasing widths: the shape survives the projection."""
    assume(start != end)
    widths = profile("cosine", Budget(16, 256, multiple_of=8), start=start, end=end)
    pairs = list(zip(widths, widths[1:], strict=False))
    assert all(a >= b for a, b in pairs) if start > end else all(a <= b for a, b in pairs)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cosine:start=1,start=2", "'start' is given twice"),
        ("groups:early,third=late", "'third' is given twice"),
        ("cosine:start=nan", "start='nan' in 'cosine:start=nan' must be a finite number"),
        ("cosine:start=inf", "must be a finite number"),
        ("cosine:start=1e400", "start='1e400' .* must be a finite number"),
        ("sigmoid:midpoint=2", r"midpoint=2.0 must lie in \[0, 1\]"),
    ],
)
def test_spec_refuses_repeats_and_non_finite(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ProfileSpec.parse(text)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_layers": 10**9, "base_width": 64}, "n_layers=1000000000 must be a positive integer, at most 10000"),
        ({"n_layers": 4, "base_width": 2**40}, "base_width=.* at most 1073741824"),
        ({"n_layers": 4, "base_width": 64, "multiple_of": 0}, "multiple_of=0 must be a positive integer"),
        ({"n_layers": 4.0, "base_width": 64}, "n_layers=4.0 must be a positive integer"),
        ({"n_layers": 4, "base_width": 64, "max_width": 1.5}, "max_width=1.5"),
    ],
)
def test_budget_bounds(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Budget(**kwargs)  # type: ignore[arg-type]


def test_the_largest_budget_projects_quickly() -> None:
    import time

    budget = Budget(10_000, 2**30 // 256 * 256, multiple_of=256)
    t0 = time.perf_counter()
    widths = profile("cosine", budget, start=1e300, end=1e-300)
    assert sum(widths) == budget.total and time.perf_counter() - t0 < 10
