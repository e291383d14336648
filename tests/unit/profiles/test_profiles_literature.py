"""The literature's shapes (OpenELM, Reverse, Frame, Crown, middle-heavy): exact budgets at every
preset and architecture, for any allowed parameters; their shapes; their refusals; the set name."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tlmsearch.configs.presets import PRESETS
from tlmsearch.core.base import ARCHITECTURE_NAMES
from tlmsearch.errors import ConfigError
from tlmsearch.models.counts import count_params, flops_per_token
from tlmsearch.profiles import (
    FAMILIES,
    LITERATURE,
    Budget,
    ProfileSpec,
    expand_profile_sets,
    profile,
    project_to_budget,
    relative_widths,
)

NEW = ("openelm", "reverse", "frame", "crown", "middle")
BIG = 1.7976931348623157e308
positive = st.floats(min_value=5e-324, max_value=BIG, allow_nan=False, allow_infinity=False)


@pytest.mark.parametrize("family", NEW)
@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_and_architecture_keeps_the_uniform_parameter_count(family: str, name: str) -> None:
    p = PRESETS[name]
    widths = profile(family, p.budget())
    assert p.budget().is_valid(widths)
    for arch in ARCHITECTURE_NAMES:
        uniform, shaped = p.model_config(arch), p.model_config(arch, widths)
        assert count_params(shaped) == count_params(uniform)
        assert flops_per_token(shaped) == flops_per_token(uniform)


@st.composite
def budgets(draw: st.DrawFn) -> Budget:
    n = draw(st.integers(1, 48))
    multiple = draw(st.sampled_from([1, 8, 16, 32, 256]))
    base = multiple * draw(st.integers(1, 64))
    lo = draw(st.one_of(st.none(), st.integers(1, base)))
    hi = draw(st.one_of(st.none(), st.integers(base, 4 * base)))
    return Budget(n, base, multiple_of=multiple, min_width=lo, max_width=hi)


@st.composite
def allowed_params(draw: st.DrawFn, family: str) -> dict[str, float]:
    if family == "openelm":
        return {"start": draw(positive), "end": draw(positive)}
    if family == "reverse":
        a, b = draw(positive), draw(positive)
        assume(a != b)
        return {"start": max(a, b), "end": min(a, b)}
    if family == "frame":
        return {"start": draw(positive), "end": draw(positive), "frame": draw(positive)}
    if family == "crown":
        s, e = draw(positive), draw(positive)
        assume(max(s, e) < BIG)
        peak = draw(st.floats(min_value=max(s, e), max_value=BIG, exclude_min=True))
        return {"start": s, "end": e, "peak": peak, "frame": draw(positive)}
    return {"fraction": draw(st.floats(0, 1, exclude_min=True)), "ends": draw(st.floats(0, 1, exclude_max=True))}


@pytest.mark.parametrize("family", NEW)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_allowed_parameters_land_exactly_on_the_budget(family: str, data: st.DataObject) -> None:
    budget = data.draw(budgets())
    params = data.draw(allowed_params(family))
    rel = relative_widths(family, budget.n_layers, **params)
    assert len(rel) == budget.n_layers and all(math.isfinite(r) and r >= 0 for r in rel) and max(rel) > 0
    widths = profile(family, budget, **params)
    assert budget.is_valid(widths) and sum(widths) == sum(budget.uniform())
    assert project_to_budget(widths, budget) == widths  # idempotent
    assert profile(family, budget, **params) == widths  # deterministic
    for i in range(len(rel)):  # a wider raw layer never ends narrower
        for j in range(len(rel)):
            if rel[i] > rel[j]:
                assert widths[i] >= widths[j]


def test_openelm_is_the_papers_line_normalised_to_the_budget() -> None:
    n = 12
    betas = [0.5 + 3.5 * i / (n - 1) for i in range(n)]  # OpenELM: beta_min 0.5 -> beta_max 4.0
    rel = relative_widths("openelm", n)
    assert rel == pytest.approx(betas)
    budget = Budget(n, 2048, multiple_of=256)
    widths = profile("openelm", budget)
    want = [2048 * b / (sum(betas) / n) for b in betas]  # 0.22x -> 1.78x the uniform width
    assert all(abs(w - x) <= 256 for w, x in zip(widths, want, strict=True))
    assert list(widths) == sorted(widths) and widths[-1] > 6 * widths[0]


def test_reverse_is_openelm_turned_around() -> None:
    for n in (2, 6, 12, 24):
        assert relative_widths("reverse", n) == pytest.approx(relative_widths("openelm", n)[::-1])
    widths = profile("reverse", Budget(24, 2816, multiple_of=256))
    assert list(widths) == sorted(widths, reverse=True) and widths[0] > widths[-1]


def test_frame_is_openelms_line_with_wide_first_and_last_layers() -> None:
    for n in (3, 6, 12, 18, 24):
        rel = relative_widths("frame", n)
        assert rel[0] == rel[-1] == max(rel) == 4.0  # the frame: the isotropic multiplier
        assert rel[1:-1] == pytest.approx(relative_widths("openelm", n)[1:-1])  # the authors' linspace inside
        assert rel[1] == min(rel)
    widths = profile("frame", Budget(12, 2048, multiple_of=256))
    mean = sum(widths) / len(widths)
    assert widths[0] == widths[-1] == max(widths) > 1.5 * mean and widths[1] == min(widths) < 0.35 * mean
    assert relative_widths("frame", 2) == [4.0, 4.0]  # two layers are all frame: uniform


def test_crown_peaks_in_the_middle_between_a_frame() -> None:
    assert relative_widths("crown", 5) == pytest.approx([4.0, 2.25, 4.0, 2.25, 4.0])
    assert relative_widths("crown", 6) == pytest.approx([4.0, 2.25, 4.0, 4.0, 2.25, 4.0])
    for n in (5, 6, 7, 12, 18, 24):
        rel = relative_widths("crown", n)
        centre = [n // 2] if n % 2 else [n // 2 - 1, n // 2]  # the authors' knots: ceil(L/2) - 1 (and ceil(L/2))
        assert [rel[i] for i in centre] == [4.0] * len(centre) and rel[0] == rel[-1] == 4.0
        inner = rel[1:-1]
        top = inner.index(4.0)
        assert inner[: top + 1] == sorted(inner[: top + 1])  # rising to the middle
        assert inner[top:] == sorted(inner[top:], reverse=True)  # falling after it
        assert rel == rel[::-1]  # symmetric for equal start and end, exactly
        assert min(rel) == rel[1] == rel[-2] < 4.0
    unframed = relative_widths("crown", 7, frame=0.5)  # frame = start: the bare three-point profile
    assert unframed == pytest.approx([0.5, 1.667, 2.833, 4.0, 2.833, 1.667, 0.5], abs=1e-3)
    widths = profile("crown", Budget(12, 2048, multiple_of=256))
    assert widths[0] == widths[5] == widths[6] == widths[-1] == max(widths) and widths[1] == min(widths)


@pytest.mark.parametrize(
    ("n", "carrying"), [(12, range(2, 10)), (24, range(3, 20)), (40, range(6, 34)), (6, range(1, 5))]
)
def test_middle_carries_the_centred_seventy_percent(n: int, carrying: range) -> None:
    rel = relative_widths("middle", n)
    assert [i for i, r in enumerate(rel) if r == 1.0] == list(carrying)  # round(0.7 n), consecutive, centred
    budget = Budget(n, 512, multiple_of=32)
    widths = profile("middle", budget)
    thin = [w for i, w in enumerate(widths) if i not in carrying]
    assert thin == [budget.lo] * len(thin)  # ends=0: as thin as the budget allows
    assert min(widths[i] for i in carrying) > 512
    assert relative_widths("middle", 10, fraction=1.0) == [1.0] * 10
    assert relative_widths("middle", 10, fraction=0.5, ends=0.25) == [0.25] * 2 + [1.0] * 5 + [0.25] * 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("reverse:start=0.5,end=4", "reverse: start=0.5 must be > end=4.0"),
        ("reverse:start=2,end=2", "reverse: start=2.0 must be > end=2.0"),
        ("crown:peak=0.5", "crown: peak=0.5 must be > max(start, end) = 0.5"),
        ("crown:start=5", "crown: peak=4.0 must be > max(start, end) = 5.0"),
        ("crown:end=0", "crown: end=0.0 must be > 0"),
        ("frame:frame=0", "frame: frame=0.0 must be > 0"),
        ("crown:frame=-2", "crown: frame=-2.0 must be > 0"),
        ("frame:start=-1", "frame: start=-1.0 must be > 0"),
        ("middle:fraction=0", "middle: fraction=0.0 must lie in (0, 1]"),
        ("middle:fraction=1.2", "middle: fraction=1.2 must lie in (0, 1]"),
        ("middle:ends=1", "middle: ends=1.0 must lie in [0, 1)"),
        ("middle:ends=-0.1", "middle: ends=-0.1 must lie in [0, 1)"),
        ("openelm:start=0", "openelm: start=0.0 must be > 0"),
        ("crown:width=2", "family 'crown' has no parameter 'width'; allowed: start, peak, end, frame"),
    ],
)
def test_bad_parameters_are_refused_when_parsed_with_the_allowed_range(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        ProfileSpec.parse(text)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    with pytest.raises(ConfigError, match=re.escape(message)):  # the same refusal without a text
        profile(text.partition(":")[0], Budget(8, 64, multiple_of=8), **_params(text))


def _params(text: str) -> dict[str, float]:
    return {k: float(v) for k, _, v in (item.partition("=") for item in text.partition(":")[2].split(","))}


def test_the_literature_set_names_every_shape_with_its_papers_values() -> None:
    assert expand_profile_sets(["literature"]) == LITERATURE
    families = [ProfileSpec.parse(t).family for t in LITERATURE]
    assert families == ["openelm", "reverse", "frame", "crown", "middle", "bowtie"]
    for text in LITERATURE:  # written out in full: the defaults, so a default change shows here
        spec = ProfileSpec.parse(text)
        assert spec.resolved().params == spec.params == {**FAMILIES[spec.family].defaults, **spec.params}
    assert expand_profile_sets(["uniform", "literature", "bowtie:ratio=0.3,position=0.75", "literature"]) == (
        "uniform",
        *LITERATURE,
    )
    assert expand_profile_sets(["crown", " literature "]) == ("crown", *LITERATURE)


def test_every_literature_shape_has_its_own_marker() -> None:
    from tlmsearch.plots.style import baseline_style  # pure: no plotly

    names = ["cosine:start=1.5,end=0.5", "uniform", "cosine:start=0.5,end=1.5", "linear:start=1.5,end=0.5"]
    names += ["groups:third=early", "groups:third=middle", "groups:third=late"]
    names += [str(ProfileSpec.parse(t)) for t in LITERATURE]
    styles = [baseline_style(n) for n in names]
    assert len({(s.color, s.symbol) for s in styles}) == len(names)
    spare = {(s.color, s.symbol) for s in (baseline_style("knots:k0=1", i) for i in range(4))}
    assert not spare & {(s.color, s.symbol) for s in styles}
