"""Budgets of MLP hidden units and the exact-sum projection of relative widths onto them."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from tlmsearch.core.base import Config
from tlmsearch.core.validate import MAX_LAYERS, MAX_WIDTH, check_int
from tlmsearch.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Budget(Config):
    """`n_layers` MLPs whose hidden widths sum to `n_layers * base_width`.

    Widths are multiples of `multiple_of` within `[min_width, max_width]`; `min_width`
    defaults to `multiple_of` and `max_width` to no bound (None). Layers are at most
    `MAX_LAYERS` (10,000) and widths at most `MAX_WIDTH` (2**30), so totals stay exact in
    float64 arithmetic and a projection takes well under a second.
    """

    n_layers: int
    base_width: int
    multiple_of: int = 1
    min_width: int | None = None
    max_width: int | None = None

    def __post_init__(self) -> None:
        # bounded so that totals stay exact in float64 and the projection stays O(n_layers)
        check_int("budget: n_layers", self.n_layers, 1, MAX_LAYERS)
        for name in ("base_width", "multiple_of"):
            check_int(f"budget: {name}", getattr(self, name), 1, MAX_WIDTH)
        for name in ("min_width", "max_width"):
            if getattr(self, name) is not None:
                check_int(f"budget: {name}", getattr(self, name), 1, MAX_WIDTH)
        if self.base_width % self.multiple_of:
            raise ConfigError(
                f"budget: base_width={self.base_width} is not a multiple of multiple_of={self.multiple_of}; "
                f"use e.g. {max(1, round(self.base_width / self.multiple_of)) * self.multiple_of}"
            )
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

    def is_valid(self, widths: Sequence[int], total: int | None = None) -> bool:
        """`widths` are a profile of this budget: usable widths summing to `total` (default: the
        budget's own total)."""
        return (
            len(widths) == self.n_layers
            and all(isinstance(w, int) and w % self.multiple_of == 0 and self.lo <= w <= self.hi for w in widths)
            and sum(widths) == (self.total if total is None else total)
        )


def project_to_budget(raw: Sequence[float], budget: Budget) -> tuple[int, ...]:
    """Exact-sum integer widths closest in shape to `raw` (relative widths, any scale).

    Scales `raw` to the total, clamps to the usable widths by water-filling (the clamped
    excess is spread over the other layers in proportion to their raw widths), then rounds
    to multiples with the largest-remainder method. Deterministic; returns a valid profile
    unchanged.
    """
    return project_to_total(raw, budget, budget.total)


def project_to_total(raw: Sequence[float], budget: Budget, total: int) -> tuple[int, ...]:
    """`project_to_budget` onto `total` hidden units instead of the budget's own total, with the
    budget's layers, multiple and usable widths: where another part of the model (per-layer
    attention, `tlmsearch.profiles.joint_budget`) takes or gives parameters, the MLPs hold the
    rest. `total` must be a multiple of `multiple_of` within [n_layers lo, n_layers hi]."""
    n = budget.n_layers
    if len(raw) != n:
        raise ConfigError(f"profile has {len(raw)} widths; the budget has n_layers={n}")
    values = [float(r) for r in raw]
    if any(not math.isfinite(v) or v < 0 for v in values) or sum(values) <= 0:
        raise ConfigError(f"relative widths must be finite, >= 0 and not all 0; got {list(raw)}")
    m = budget.multiple_of
    if total % m or not n * budget.lo <= total <= n * budget.hi:
        raise ConfigError(
            f"{total} MLP hidden units cannot be {n} widths, each a multiple of {m} within "
            f"[{budget.lo}, {budget.hi}]; the budget allows multiples of {m} in [{n * budget.lo}, {n * budget.hi}]"
        )
    ints = [int(v) for v in values]
    if all(v.is_integer() for v in values) and budget.is_valid(ints, total):
        return tuple(ints)

    units, lo, hi = total // m, budget.lo // m, budget.hi // m
    scaled = _water_fill(values, units, lo, hi)
    return tuple(m * u for u in _largest_remainder(scaled, units, lo, hi, key=values))


def _water_fill(raw: list[float], total: float, lo: float, hi: float) -> list[float]:
    """clip(lam * raw, lo, hi) with lam chosen so that the values sum to `total`.

    The scale is searched as t = log(lam) by bisection, and each value is clipped in log space
    (t + log r against log lo and log hi) before it is exponentiated. So any finite positive
    input works, whatever its scale: 1e-308 and 1e308 alike, and relative widths 600 orders of
    magnitude apart, without overflow, underflow to a wrong scale or a bisection that cannot
    reach the answer. Zero widths stay at `lo` (they have no scale to multiply).
    """
    logs = [math.log(r) if r > 0 else -math.inf for r in raw]
    positive = [v for v in logs if v > -math.inf]
    log_lo, log_hi = math.log(lo), math.log(hi)

    def value(t: float, log_r: float) -> float:
        z = t + log_r
        if z <= log_lo:
            return lo
        if z >= log_hi:
            return hi
        return min(hi, max(lo, math.exp(z)))

    def filled(t: float) -> float:
        return math.fsum(value(t, v) for v in logs)

    # at t_low every value is at lo (sum n*lo <= total); at t_high every positive one is at hi
    t_low, t_high = log_lo - max(positive), log_hi - min(positive)
    if filled(t_high) > total:
        for _ in range(4096):  # ends far sooner: the interval halves until floats cannot split it
            mid = 0.5 * (t_low + t_high)
            if mid in (t_low, t_high):
                break
            if filled(mid) < total:
                t_low = mid
            else:
                t_high = mid
    return [value(t_high, v) for v in logs]


def _largest_remainder(values: list[float], total: int, lo: int, hi: int, key: list[float]) -> list[int]:
    """Round to integers within [lo, hi] summing to `total`, giving spare units to the
    largest fractional parts (ties to the larger raw width `key`, then the earlier layer), so
    that a layer never ends narrower than one with a smaller raw width."""
    values = [round(v, 9) for v in values]
    ints = [min(hi, max(lo, math.floor(v))) for v in values]
    frac = [v - i for v, i in zip(values, ints, strict=True)]
    deficit = total - sum(ints)
    order = sorted(range(len(values)), key=lambda i: (-frac[i], -key[i], i))
    while deficit > 0:
        for i in order:
            if deficit and ints[i] < hi:
                ints[i] += 1
                deficit -= 1
    order = sorted(range(len(values)), key=lambda i: (frac[i], key[i], -i))
    while deficit < 0:
        for i in order:
            if deficit and ints[i] > lo:
                ints[i] -= 1
                deficit += 1
    return ints
