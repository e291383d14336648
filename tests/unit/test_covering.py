"""The development loop's covering subsets (`tests/helpers/covering.py`): every value of every axis
kept, the rest marked slow, the cases in their order."""

from __future__ import annotations

from itertools import product

import pytest
from covering import covering


def _slow(param: object) -> bool:
    return any(m.name == "slow" for m in param.marks)  # type: ignore[attr-defined]


def test_a_product_keeps_about_its_diagonal_and_every_value() -> None:
    cases = list(product("abc", range(4)))
    params = covering(cases, 0, 1)
    assert [p.values for p in params] == cases  # every case, in its order
    kept = [p.values for p in params if not _slow(p)]
    assert {c for c, _ in kept} == set("abc") and {n for _, n in kept} == set(range(4))
    assert len(kept) == 4  # the longer axis: each case brings a new value of it
    assert [n for c, n in kept if c == "a"] and sum(c == "a" for c, _ in kept) <= 2  # the letters take turns


def test_functions_of_a_case_are_axes_and_one_axis_keeps_its_first_cases() -> None:
    names = ["train --config loop", "train --config fifo", "status loop", "status fifo"]
    params = covering(names, lambda c: c.rsplit(" ", 1)[0], lambda c: c.rsplit(" ", 1)[1])
    assert [p.values[0] for p in params if not _slow(p)] == ["train --config loop", "status fifo"]
    single = covering([1, 1, 2], lambda n: n)
    assert [_slow(p) for p in single] == [False, True, False]
    with pytest.raises(ValueError, match="at least one axis"):
        covering([1, 2])
