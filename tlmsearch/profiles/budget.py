"""Budgets of MLP hidden units and the exact-sum projection of relative widths onto them."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from tlmsearch.config import Config
from tlmsearch.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Budget(Config):
    """`n_layers` MLPs whose hidden widths sum to `n_layers * base_width`.

    Widths are multiples of `multiple_of` within `[min_width, max_width]`; `min_width`
    defaults to `multiple_of` and `max_width` to no bound (None).
    """

    n_layers: int
    base_width: int
    multiple_of: int = 1
    min_width: int | None = None
    max_width: int | None = None

    def __post_init__(self) -> None:
        for name in ("n_layers", "base_width", "multiple_of"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"budget: {name}={value!r} must be a positive integer")
        if self.base_width % self.multiple_of:
            raise ConfigError(
                f"budget: base_width={self.base_width} is not a multiple of multiple_of={self.multiple_of}; "
                f"use e.g. {max(1, round(self.base_width / self.multiple_of)) * self.multiple_of}"
            )
        if self.min_width is not None and self.min_width < 1:
            raise ConfigError(f"budget: min_width={self.min_width} must be >= 1")
        if self.max_width is not None and self.min_width is not None and self.min_width > self.max_width:
            raise ConfigError(f"budget: min_width={self.min_width} > max_width={self.max_width}")
        if not self.lo <= self.base_width <= self.hi:
            raise ConfigError(
                f"budget is infeasible: base_width={self.base_width} must lie within the usable widths "
                f"[{self.lo}, {self.hi}] (min_width={self.min_width}, max_width={self.max_width}, "
                f"multiple_of={self.multiple_of})"
            )

    @property
    def total(self) -> int:
        """Total MLP hidden units, the same for every profile of this budget."""
        return self.n_layers * self.base_width

    @property
    def lo(self) -> int:
        """Smallest usable width: `min_width` rounded up to a multiple."""
        m = self.multiple_of
        return max(m, -(-(self.min_width or m) // m) * m)

    @property
    def hi(self) -> int:
        """Largest usable width: `max_width` rounded down to a multiple (or the total)."""
        if self.max_width is None:
            return self.total
        return (self.max_width // self.multiple_of) * self.multiple_of

    def uniform(self) -> tuple[int, ...]:
        return (self.base_width,) * self.n_layers

    def is_valid(self, widths: Sequence[int]) -> bool:
        return (
            len(widths) == self.n_layers
            and all(isinstance(w, int) and w % self.multiple_of == 0 and self.lo <= w <= self.hi for w in widths)
            and sum(widths) == self.total
        )


def project_to_budget(raw: Sequence[float], budget: Budget) -> tuple[int, ...]:
    """Exact-sum integer widths closest in shape to `raw` (relative widths, any scale).

    Scales `raw` to the total, clamps to the usable widths by water-filling (the clamped
    excess is spread over the other layers in proportion to their raw widths), then rounds
    to multiples with the largest-remainder method. Deterministic; returns a valid profile
    unchanged.
    """
    n = budget.n_layers
    if len(raw) != n:
        raise ConfigError(f"profile has {len(raw)} widths; the budget has n_layers={n}")
    values = [float(r) for r in raw]
    if any(not math.isfinite(v) or v < 0 for v in values) or sum(values) <= 0:
        raise ConfigError(f"relative widths must be finite, >= 0 and not all 0; got {list(raw)}")
    if all(float(v).is_integer() for v in values) and budget.is_valid([int(v) for v in values]):
        return tuple(int(v) for v in values)

    m = budget.multiple_of
    units, lo, hi = budget.total // m, budget.lo // m, budget.hi // m
    scaled = _water_fill(values, units, lo, hi)
    return tuple(m * u for u in _largest_remainder(scaled, units, lo, hi))


def _water_fill(raw: list[float], total: float, lo: float, hi: float) -> list[float]:
    """clip(lam * raw, lo, hi) with lam chosen so that the values sum to `total`."""

    def filled(lam: float) -> float:
        return sum(min(hi, max(lo, lam * r)) for r in raw)

    low, high = 0.0, 1.0
    while filled(high) < total:
        high *= 2.0
        if high > 1e300:
            break
    for _ in range(200):
        mid = 0.5 * (low + high)
        if filled(mid) < total:
            low = mid
        else:
            high = mid
    return [min(hi, max(lo, high * r)) for r in raw]


def _largest_remainder(values: list[float], total: int, lo: int, hi: int) -> list[int]:
    """Round to integers within [lo, hi] summing to `total`, giving spare units to the
    largest fractional parts (ties to the earlier layer)."""
    values = [round(v, 9) for v in values]
    ints = [min(hi, max(lo, math.floor(v))) for v in values]
    frac = [v - i for v, i in zip(values, ints, strict=True)]
    deficit = total - sum(ints)
    order = sorted(range(len(values)), key=lambda i: (-frac[i], i))
    while deficit > 0:
        for i in order:
            if deficit and ints[i] < hi:
                ints[i] += 1
                deficit -= 1
    order = sorted(range(len(values)), key=lambda i: (frac[i], -i))
    while deficit < 0:
        for i in order:
            if deficit and ints[i] > lo:
                ints[i] -= 1
                deficit += 1
    return ints
