"""Big parametrized matrices in the development loop: a covering subset there, every case in CI.

    @pytest.mark.parametrize(("command", "field"), covering(product(COMMANDS, FIELDS), 0, 1))

`covering(cases, *axes)` keeps in the loop a few cases that together hold every value of each of
`axes` (positions in the case tuple, or functions of the case): greedily, the case with the most
values not yet held first (ties: the one whose values were kept least, then the earlier case), so
a full product keeps about its diagonal, the values taking turns,
and every command, every field, every file shape still runs in `-m "not slow"`. The other cases
are marked `slow` (run by the README's test command, as every slow test).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import pytest

Axis = int | Callable[[Any], Hashable]


def _value(case: Any, axis: Axis) -> Hashable:
    if callable(axis):
        return axis(case)
    return case[axis]


def covering(cases: Iterable[Any], *axes: Axis, ids: Callable[[Any], str] | None = None) -> list[Any]:
    """`cases` as pytest params, in their order: the covering ones plain, the rest slow."""
    if not axes:
        raise ValueError("covering needs at least one axis")
    cases = list(cases)
    values = [[_value(c, a) for a in axes] for c in cases]
    kept: list[Counter[Hashable]] = [Counter() for _ in axes]  # how often each value was kept
    keep: set[int] = set()
    while True:
        gains = [sum(v not in k for v, k in zip(vs, kept, strict=True)) for vs in values]
        used = [sum(k[v] for v, k in zip(vs, kept, strict=True)) for vs in values]
        best = max(range(len(cases)), key=lambda i: (gains[i], -used[i], -i), default=None)
        if best is None or gains[best] == 0:
            break
        keep.add(best)
        for v, k in zip(values[best], kept, strict=True):
            k[v] += 1
    out = []
    for i, case in enumerate(cases):
        args = case if isinstance(case, tuple) else (case,)
        marks = () if i in keep else (pytest.mark.slow,)
        out.append(pytest.param(*args, marks=marks, id=ids(case) if ids else None))
    return out
