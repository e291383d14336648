"""Depth coordinates and straight-line mixing shared by the profile families (pure math)."""

from __future__ import annotations

import math


def depths(n: int) -> list[float]:
    """Relative depth x_l = l / (L - 1) in [0, 1] (0.0 for a single layer)."""
    return [i / (n - 1) if n > 1 else 0.0 for i in range(n)]


def mix(s: float, e: float, w: float) -> float:
    """(1 - w) s + w e for w in [0, 1], kept within [min(s, e), max(s, e)].

    Written as a sum of two non-negative terms, not s + (e - s) w: that form cancels to 0 when
    start is 1e-262 and end is 1 (a positive width lost), and e - s overflows near 1e308.
    Pairs that are both tiny (subnormal, e.g. start 1e-323, end 5e-324) are first scaled up by
    an exact power of two: widths are relative (the budget projection sets the scale), and
    their mixtures would otherwise round to one of two representable values, not a taper.
    """
    if 0 < max(s, e) < 1e-290:
        s, e = math.ldexp(s, 900), math.ldexp(e, 900)
    v = s * (1.0 - w) + e * w
    return min(max(v, min(s, e)), max(s, e))
