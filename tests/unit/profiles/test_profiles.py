"""Exact budgets for every family: property-based and known-value tests of tlmsearch.profiles."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tlmsearch.errors import ConfigError
from tlmsearch.profiles import (
    FAMILIES,
    Budget,
    ProfileSpec,
    profile,
    project_to_budget,
    relative_widths,
    shape_stats,
    spearman,
)


@st.composite
def budgets(draw: st.DrawFn) -> Budget:
    n = draw(st.integers(2, 64))
    multiple = draw(st.sampled_from([1, 8, 32, 64, 128, 256]))
    base = multiple * draw(st.integers(1, 64))
    lo = draw(st.one_of(st.none(), st.integers(1, base)))
    hi = draw(st.one_of(st.none(), st.integers(base, 4 * base)))
    return Budget(n, base, multiple_of=multiple, min_width=lo, max_width=hi)


def family_params(family: str, n: int, draw: st.DrawFn) -> dict[str, float | str]:
    pos = st.floats(0.1, 3.0)
    if family in ("cosine", "linear", "openelm"):
        return {"start": draw(pos), "end": draw(pos)}
    if family == "sigmoid":
        return {"start": draw(pos), "end": draw(pos), "steepness": draw(st.floats(0.5, 40)), "midpoint": draw(pos) / 3}
    if family == "power":
        return {"exponent": draw(st.floats(-2, 2))}
    if family == "groups":
        return {"third": draw(st.sampled_from(["early", "middle", "late"])), "factor": draw(pos)}
    if family == "bump":
        return {
            "centre": draw(st.floats(0, 1)),
            "width": draw(st.floats(0.05, 1)),
            "amplitude": draw(st.floats(-0.9, 3)),
        }
    if family == "knots":
        k = draw(st.integers(1, 8))
        out: dict[str, float | str] = {f"k{i}": draw(pos) for i in range(k)}
        out["mode"] = draw(st.sampled_from(["free", "decreasing", "increasing"]))
        out["interp"] = draw(st.sampled_from(["linear", "pchip"]))
        return out
    if family == "free":
        return {f"l{i}": draw(st.floats(-3, 3)) for i in range(n)}
    return {}


def assert_on_budget(widths: tuple[int, ...], budget: Budget) -> None:
    assert len(widths) == budget.n_layers
    assert all(isinstance(w, int) for w in widths)
    assert all(w % budget.multiple_of == 0 for w in widths)
    assert all(budget.lo <= w <= budget.hi for w in widths)
    if budget.min_width is not None:
        assert min(widths) >= budget.min_width
    if budget.max_width is not None:
        assert max(widths) <= budget.max_width
    assert sum(widths) == budget.total


@pytest.mark.parametrize("family", list(FAMILIES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_family_is_exactly_on_budget_and_idempotent(family: str, data: st.DataObject) -> None:
    budget = data.draw(budgets())
    params = family_params(family, budget.n_layers, data.draw)
    widths = profile(family, budget, **params)
    assert_on_budget(widths, budget)
    assert project_to_budget(widths, budget) == widths
    assert profile(family, budget, **params) == widths  # deterministic


@settings(max_examples=200, deadline=None)
@given(data=st.data())
@pytest.mark.slow
def test_projection_of_arbitrary_raw_widths(data: st.DataObject) -> None:
    budget = data.draw(budgets())
    raw = data.draw(st.lists(st.floats(0, 1e6), min_size=budget.n_layers, max_size=budget.n_layers))
    if sum(raw) <= 0:
        raw[0] = 1.0
    widths = project_to_budget(raw, budget)
    assert_on_budget(widths, budget)
    assert project_to_budget(widths, budget) == widths


def test_paper_cosine_known_values() -> None:
    budget = Budget(40, 14336, multiple_of=256)
    widths = profile("cosine", budget, start=1.5, end=0.5)
    assert widths[0] == 21504 and widths[-1] == 7168
    assert sum(widths) == 40 * 14336


def test_cosine_formula_matches_the_paper_before_rounding() -> None:
    rel = relative_widths("cosine", 24, start=1.5, end=0.5)
    for layer, r in enumerate(rel):
        assert r == pytest.approx(0.5 + (1.5 - 0.5) * (1 + math.cos(math.pi * layer / 23)) / 2)
    assert sum(rel) / 24 == pytest.approx(1.0)


def test_uniform_and_expanding() -> None:
    budget = Budget(6, 96, multiple_of=32)
    assert profile("uniform", budget) == (96,) * 6
    expanding = profile("cosine", budget, start=0.5, end=1.5)
    tapering = profile("cosine", budget, start=1.5, end=0.5)
    assert expanding[0] < expanding[-1] and tapering[0] > tapering[-1]
    # mirror images up to how rounding ties are broken (towards the earlier layer)
    assert all(abs(a - b) <= 32 for a, b in zip(expanding, reversed(tapering), strict=True))
    assert shape_stats(expanding).monotonicity == "non-decreasing"


def test_groups_widens_the_chosen_third() -> None:
    budget = Budget(9, 300, multiple_of=1)
    for third, layers in (("early", range(0, 3)), ("middle", range(3, 6)), ("late", range(6, 9))):
        w = profile("groups", budget, third=third, factor=2.0)
        assert {w[i] for i in layers} == {450} and {w[i] for i in range(9) if i not in layers} == {225}


def test_water_filling_respects_bounds() -> None:
    budget = Budget(4, 100, multiple_of=10, min_width=50, max_width=150)
    widths = project_to_budget([100, 1, 1, 1], budget)
    assert widths == (150, 90, 80, 80) or (sorted(widths[1:]) == [80, 80, 90] and widths[0] == 150)
    assert sum(widths) == 400


def test_shape_stats() -> None:
    s = shape_stats((300, 200, 100))
    assert s.front_load == pytest.approx((200 * 0.5 + 100 * 1.0) / 600)
    assert s.monotonicity == "non-increasing" and s.spearman == pytest.approx(-1.0)
    assert s.first_last_ratio == pytest.approx(3.0)
    cos = profile("cosine", Budget(16, 1000), start=1.4, end=0.6)
    fit = shape_stats(cos)
    assert fit.cosine_start == pytest.approx(1.4, abs=0.01) and fit.cosine_end == pytest.approx(0.6, abs=0.01)
    assert fit.cosine_distance < 0.01
    assert shape_stats((5, 9, 5)).monotonicity == "neither"
    assert math.isnan(spearman([1, 2, 3], [3, 3, 3]))
    assert shape_stats((64, 64, 64)).spearman == 0.0


def test_spec_text_round_trip() -> None:
    spec = ProfileSpec.parse("cosine:start=1.5,end=0.5")
    assert spec == ProfileSpec(family="cosine", params={"start": 1.5, "end": 0.5})
    assert ProfileSpec.parse(str(spec)) == spec
    assert ProfileSpec.from_json(spec.to_json()) == spec
    assert ProfileSpec.parse("groups:late").params == {"third": "late"}
    assert ProfileSpec.parse("uniform") == ProfileSpec()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nope", "unknown profile family 'nope'"),
        ("cosine:start", "malformed profile parameter"),
        ("cosine:slope=2", "has no parameter 'slope'; allowed: start, end"),
        ("cosine:start=x", "must be a finite number"),
        ("cosine:start=-1", "must be > 0"),
        ("groups:third=top", "choose one of: early, middle, late"),
        ("knots:mode=free", "needs knot values"),
        ("knots:k0=1,k2=1", "without gaps"),
        ("bump:amplitude=-1", "must be > -1"),
    ],
)
def test_bad_specs_say_what_is_allowed(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ProfileSpec.parse(text)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_layers": 0, "base_width": 64}, "n_layers=0 must be a positive integer"),
        ({"n_layers": -3, "base_width": 64}, "n_layers=-3"),
        ({"n_layers": 4, "base_width": 100, "multiple_of": 64}, "not a multiple of multiple_of=64"),
        ({"n_layers": 4, "base_width": 64, "min_width": 100, "max_width": 50}, "min_width=100 > max_width=50"),
        ({"n_layers": 4, "base_width": 64, "min_width": 65}, "infeasible"),
        ({"n_layers": 4, "base_width": 64, "max_width": 63}, "infeasible"),
    ],
)
def test_bad_budgets(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Budget(**kwargs)


def test_projection_rejects_bad_raw() -> None:
    budget = Budget(3, 8)
    with pytest.raises(ConfigError, match="n_layers=3"):
        project_to_budget([1, 2], budget)
    with pytest.raises(ConfigError, match="finite"):
        project_to_budget([1, float("nan"), 1], budget)
    with pytest.raises(ConfigError, match="not all 0"):
        project_to_budget([0, 0, 0], budget)


def test_budget_round_trips() -> None:
    budget = Budget(12, 512, multiple_of=32, max_width=1024)
    assert Budget.from_dict(budget.to_dict()) == budget
    assert Budget.from_yaml(budget.to_yaml()) == budget
