"""Shape statistics of a width profile: front-loading, monotonicity, best-fitting cosine."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from tlmsearch.core.base import Config
from tlmsearch.errors import ConfigError
from tlmsearch.profiles.interp import depths


@dataclasses.dataclass(frozen=True, kw_only=True)
class ShapeStats(Config):
    """How a profile spreads its width over depth."""

    front_load: float  # width-weighted mean relative depth; 0.5 = uniform, < 0.5 = wider early
    monotonicity: str  # "constant" | "non-increasing" | "non-decreasing" | "neither"
    spearman: float  # rank correlation of width with depth (-1 = strictly tapering)
    first_last_ratio: float  # widths[0] / widths[-1]
    cosine_start: float  # best-fitting cosine schedule (least squares, relative to the mean)
    cosine_end: float
    cosine_distance: float  # RMS residual of that fit, relative to the mean width


def shape_stats(widths: Sequence[float]) -> ShapeStats:
    n = len(widths)
    if n == 0 or any(w <= 0 for w in widths):
        raise ConfigError(f"widths must be a non-empty list of positive numbers; got {list(widths)}")
    mean = sum(widths) / n
    rel = [w / mean for w in widths]
    xs = depths(n)
    front = sum(w * x for w, x in zip(widths, xs, strict=True)) / sum(widths) if n > 1 else 0.5
    steps = [b - a for a, b in zip(widths, widths[1:], strict=False)]
    if all(s == 0 for s in steps):
        mono = "constant"
    elif all(s <= 0 for s in steps):
        mono = "non-increasing"
    elif all(s >= 0 for s in steps):
        mono = "non-decreasing"
    else:
        mono = "neither"
    start, end, dist = _fit_cosine(rel)
    return ShapeStats(
        front_load=front,
        monotonicity=mono,
        spearman=0.0 if mono == "constant" or n < 2 else spearman(list(range(n)), list(widths)),
        first_last_ratio=widths[0] / widths[-1],
        cosine_start=start,
        cosine_end=end,
        cosine_distance=dist,
    )


def _fit_cosine(rel: list[float]) -> tuple[float, float, float]:
    """Least-squares (start, end) of the cosine schedule to relative widths, and RMS residual.

    rel_l ~ e (1 - c_l) + s c_l with c_l = (1 + cos(pi x_l)) / 2: linear in (s, e).
    """
    n = len(rel)
    if n == 1:
        return rel[0], rel[0], 0.0
    c = [(1 + math.cos(math.pi * x)) / 2 for x in depths(n)]
    a11 = sum(ci * ci for ci in c)
    a22 = sum((1 - ci) ** 2 for ci in c)
    a12 = sum(ci * (1 - ci) for ci in c)
    b1 = sum(ci * r for ci, r in zip(c, rel, strict=True))
    b2 = sum((1 - ci) * r for ci, r in zip(c, rel, strict=True))
    det = a11 * a22 - a12 * a12
    s = (b1 * a22 - b2 * a12) / det
    e = (a11 * b2 - a12 * b1) / det
    resid = [r - (e * (1 - ci) + s * ci) for r, ci in zip(rel, c, strict=True)]
    return s, e, math.sqrt(sum(v * v for v in resid) / n)


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation (Pearson on average ranks); nan when undefined (a constant
    side or fewer than two points)."""
    if len(a) != len(b):
        raise ValueError(f"spearman needs equal lengths, got {len(a)} and {len(b)}")
    if len(a) < 2:
        return math.nan
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return math.nan if va == 0 or vb == 0 else cov / math.sqrt(va * vb)


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out
