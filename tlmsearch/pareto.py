"""Pareto fronts of trials: which points no other point beats on every objective.

Point j dominates point i when j is no worse on every objective and strictly better on at
least one. Exact duplicates do not dominate each other, so identical non-dominated points all
stay on the front; duplicates of a dominated point are all dominated.
"""

from __future__ import annotations

from collections.abc import Sequence


def dominates(a: Sequence[float], b: Sequence[float], minimize: Sequence[bool]) -> bool:
    """Whether point `a` dominates point `b` (objectives oriented by `minimize`)."""
    better = False
    for x, y, lo in zip(a, b, minimize, strict=True):
        x, y = (x, y) if lo else (-x, -y)
        if x > y:
            return False
        if x < y:
            better = True
    return better


def pareto_front(points: Sequence[Sequence[float]], minimize: Sequence[bool] | None = None) -> list[int]:
    """Indices (ascending) of the non-dominated points.

    `minimize[k]` says whether objective k is minimised (default: all). Two objectives use a
    sort-and-sweep in O(n log n); more objectives fall back to the pairwise definition.
    """
    if not points:
        return []
    dim = len(points[0])
    if any(len(p) != dim for p in points):
        raise ValueError("all points need the same number of objectives")
    minimize = tuple(minimize) if minimize is not None else (True,) * dim
    if len(minimize) != dim:
        raise ValueError(f"minimize has {len(minimize)} entries for {dim} objectives")
    signs = [1.0 if m else -1.0 for m in minimize]
    pts = [tuple(s * float(v) for s, v in zip(signs, p, strict=True)) for p in points]
    if dim == 1:
        best = min(p[0] for p in pts)
        return [i for i, p in enumerate(pts) if p[0] == best]
    if dim == 2:
        return _front_2d(pts)
    up = (True,) * dim
    return [i for i, p in enumerate(pts) if not any(dominates(q, p, up) for q in pts)]


def _front_2d(pts: list[tuple[float, ...]]) -> list[int]:
    # sweep by first objective then second; a point survives if its second objective is strictly
    # below every earlier group's, or equal to the best of its own group of identical points
    order = sorted(range(len(pts)), key=lambda i: (pts[i][0], pts[i][1]))
    front: list[int] = []
    best_y = float("inf")
    k = 0
    while k < len(order):
        x0 = pts[order[k]][0]
        group = []
        while k < len(order) and pts[order[k]][0] == x0:
            group.append(order[k])
            k += 1
        y_min = pts[group[0]][1]  # sorted, so the group's smallest second objective
        if y_min < best_y:
            front.extend(i for i in group if pts[i][1] == y_min)
            best_y = y_min
    return sorted(front)
