"""The bowtie (hourglass) family: exact budgets for any parameters, its known shape, its refusals."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tlmsearch.errors import ConfigError
from tlmsearch.profiles import Budget, ProfileSpec, profile, project_to_budget, relative_widths


@st.composite
def budgets(draw: st.DrawFn) -> Budget:
    n = draw(st.integers(2, 64))
    multiple = draw(st.sampled_from([1, 8, 32, 64, 128]))
    base = multiple * draw(st.integers(1, 64))
    lo = draw(st.one_of(st.none(), st.integers(1, base)))
    hi = draw(st.one_of(st.none(), st.integers(base, 4 * base)))
    return Budget(n, base, multiple_of=multiple, min_width=lo, max_width=hi)


@settings(max_examples=300, deadline=None)
@given(budget=budgets(), ratio=st.floats(0.01, 1.0), position=st.floats(0.01, 0.99))
@pytest.mark.slow
def test_bowtie_is_exactly_on_budget_idempotent_and_deterministic(
    budget: Budget, ratio: float, position: float
) -> None:
    widths = profile("bowtie", budget, ratio=ratio, position=position)
    assert len(widths) == budget.n_layers and all(isinstance(w, int) for w in widths)
    assert sum(widths) == budget.n_layers * budget.base_width  # same MLP parameters as uniform
    assert all(w % budget.multiple_of == 0 and budget.lo <= w <= budget.hi for w in widths)
    assert project_to_budget(widths, budget) == widths
    assert profile("bowtie", budget, ratio=ratio, position=position) == widths


@settings(max_examples=200, deadline=None)
@given(n=st.integers(3, 48), ratio=st.floats(0.05, 0.95), position=st.floats(0.05, 0.95))
def test_bowtie_shape_wide_ends_and_one_bottleneck(n: int, ratio: float, position: float) -> None:
    rel = relative_widths("bowtie", n, ratio=ratio, position=position)
    assert rel[0] == pytest.approx(1.0) and rel[-1] == pytest.approx(1.0)
    assert all(ratio - 1e-12 <= v <= 1.0 + 1e-12 for v in rel)
    low = min(range(n), key=rel.__getitem__)
    assert abs(low / (n - 1) - position) <= 1.0 / (n - 1) + 1e-9  # the narrowest layer sits at `position`
    assert all(a >= b - 1e-12 for a, b in zip(rel[: low + 1], rel[1 : low + 1], strict=False))  # narrows
    assert all(a <= b + 1e-12 for a, b in zip(rel[low:], rel[low + 1 :], strict=False))  # then widens


def test_bowtie_known_values_and_defaults() -> None:
    # 5 layers: depths 0, .25, .5, .75, 1; the default bottleneck 0.3x sits exactly on layer 3
    want = [1.0, 1 - 0.7 * (1 - math.cos(math.pi / 3)) / 2, 1 - 0.7 * (1 - math.cos(2 * math.pi / 3)) / 2, 0.3, 1.0]
    assert relative_widths("bowtie", 5) == pytest.approx(want)
    assert relative_widths("bowtie", 6, ratio=1.0) == pytest.approx([1.0] * 6)  # no bottleneck: uniform
    widths = profile("bowtie", Budget(12, 512, multiple_of=64))
    assert sum(widths) == 12 * 512 and widths[0] == widths[-1] == max(widths)
    assert min(widths) / max(widths) == pytest.approx(0.3, abs=0.05)  # the bottleneck ratio survives rounding
    spec = ProfileSpec.parse("bowtie:ratio=0.3,position=0.75")
    assert ProfileSpec.parse(str(spec)) == spec and spec.widths(Budget(12, 512, multiple_of=64)) == widths


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"ratio": 0.0}, "ratio=0.0 must lie in (0, 1]"),
        ({"ratio": 1.5}, "ratio=1.5 must lie in (0, 1]"),
        ({"position": 0.0}, "position=0.0 must lie in (0, 1)"),
        ({"position": 1.0}, "position=1.0 must lie in (0, 1)"),
        ({"depth": 0.5}, "has no parameter 'depth'; allowed: ratio, position"),
    ],
)
def test_bowtie_bad_parameters_say_what_is_allowed(params: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        profile("bowtie", Budget(8, 64, multiple_of=8), **params)
    assert message in str(err.value) and "\n" not in str(err.value)
