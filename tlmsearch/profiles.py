"""Per-layer MLP width profiles under an exact parameter budget (pure: no torch, no Optuna).

A *budget* fixes the number of layers and the total MLP hidden units (`n_layers * base_width`).
A *family* (cosine, linear, knots, ...) maps a few parameters to real-valued relative widths;
`project_to_budget` turns those into integer widths that are multiples of `multiple_of`, lie
within `[min_width, max_width]` and sum exactly to the total, so that every profile of one
budget has the same parameter count and FLOPs per token as the uniform model.

    >>> b = Budget(40, 14336, multiple_of=256)
    >>> w = profile("cosine", b, start=1.5, end=0.5)
    >>> w[0], w[-1], sum(w) == 40 * 14336
    (21504, 7168, True)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from tlmsearch.config import Config
from tlmsearch.errors import ConfigError

Param = float | str

# ----------------------------------------------------------------------------- budget


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


# ----------------------------------------------------------------------------- projection


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


# ----------------------------------------------------------------------------- families


def _depths(n: int) -> list[float]:
    """Relative depth x_l = l / (L - 1) in [0, 1] (0.0 for a single layer)."""
    return [i / (n - 1) if n > 1 else 0.0 for i in range(n)]


def _uniform(n: int, p: Mapping[str, Any]) -> list[float]:
    return [1.0] * n


def _cosine(n: int, p: Mapping[str, Any]) -> list[float]:
    s, e = p["start"], p["end"]
    return [e + (s - e) * (1 + math.cos(math.pi * x)) / 2 for x in _depths(n)]


def _linear(n: int, p: Mapping[str, Any]) -> list[float]:
    s, e = p["start"], p["end"]
    return [s + (e - s) * x for x in _depths(n)]


def _sigmoid(n: int, p: Mapping[str, Any]) -> list[float]:
    s, e, k, mid = p["start"], p["end"], p["steepness"], p["midpoint"]

    def sig(z: float) -> float:
        return 1.0 / (1.0 + math.exp(-z))

    g0, g1 = sig(-k * mid), sig(k * (1 - mid))
    span = g1 - g0 if g1 - g0 > 1e-12 else 1.0
    return [s + (e - s) * (sig(k * (x - mid)) - g0) / span for x in _depths(n)]


def _power(n: int, p: Mapping[str, Any]) -> list[float]:
    return [float(n - i) ** p["exponent"] for i in range(n)]


def _groups(n: int, p: Mapping[str, Any]) -> list[float]:
    third = ("early", "middle", "late").index(p["third"])
    return [p["factor"] if (3 * i) // n == third else 1.0 for i in range(n)]


def _openelm(n: int, p: Mapping[str, Any]) -> list[float]:
    return _linear(n, p)


def _bump(n: int, p: Mapping[str, Any]) -> list[float]:
    c, w, a = p["centre"], p["width"], p["amplitude"]
    return [1.0 + a * math.exp(-((x - c) ** 2) / (2 * w * w)) for x in _depths(n)]


def _knots(n: int, p: Mapping[str, Any]) -> list[float]:
    ys = [float(p[f"k{i}"]) for i in range(_count(p, "k"))]
    if p["mode"] == "decreasing":
        ys = sorted(ys, reverse=True)
    elif p["mode"] == "increasing":
        ys = sorted(ys)
    if len(ys) == 1:
        return [ys[0]] * n
    xs = [i / (len(ys) - 1) for i in range(len(ys))]
    interp = _pchip if p["interp"] == "pchip" else _piecewise_linear
    return [max(1e-6, v) for v in interp(xs, ys, _depths(n))]


def _free(n: int, p: Mapping[str, Any]) -> list[float]:
    k = _count(p, "l")
    if k != n:
        raise ConfigError(f"family 'free' needs one logit per layer (l0..l{n - 1}); got {k}")
    logits = [float(p[f"l{i}"]) for i in range(n)]
    top = max(logits)
    return [math.exp(v - top) for v in logits]


def _count(p: Mapping[str, Any], prefix: str) -> int:
    return sum(1 for k in p if k[:1] == prefix and k[1:].isdigit())


def _piecewise_linear(xs: list[float], ys: list[float], at: list[float]) -> list[float]:
    out = []
    for x in at:
        i = min(len(xs) - 2, max(0, int(x * (len(xs) - 1))))
        t = (x - xs[i]) / (xs[i + 1] - xs[i])
        out.append(ys[i] + t * (ys[i + 1] - ys[i]))
    return out


def _pchip(xs: list[float], ys: list[float], at: list[float]) -> list[float]:
    """Monotone cubic (Fritsch-Carlson) interpolation: never overshoots the knots."""
    k = len(xs)
    h = [xs[i + 1] - xs[i] for i in range(k - 1)]
    delta = [(ys[i + 1] - ys[i]) / h[i] for i in range(k - 1)]
    d = [0.0] * k
    d[0], d[-1] = delta[0], delta[-1]
    for i in range(1, k - 1):
        if delta[i - 1] * delta[i] > 0:
            w1, w2 = 2 * h[i] + h[i - 1], h[i] + 2 * h[i - 1]
            d[i] = (w1 + w2) / (w1 / delta[i - 1] + w2 / delta[i])
    for i in range(k - 1):  # keep the end slopes from overshooting
        if delta[i] == 0:
            d[i] = d[i + 1] = 0.0
    out = []
    for x in at:
        i = min(k - 2, max(0, int(x * (k - 1))))
        t = (x - xs[i]) / h[i]
        h00, h10 = (1 + 2 * t) * (1 - t) ** 2, t * (1 - t) ** 2
        h01, h11 = t * t * (3 - 2 * t), t * t * (t - 1)
        out.append(h00 * ys[i] + h10 * h[i] * d[i] + h01 * ys[i + 1] + h11 * h[i] * d[i + 1])
    return out


class Family(NamedTuple):
    """A profile family: its parameters with defaults, and the relative-width function."""

    name: str
    description: str
    defaults: dict[str, Param]
    fn: Callable[[int, Mapping[str, Any]], list[float]]
    choices: dict[str, tuple[str, ...]] = {}
    indexed: str = ""  # prefix of numbered parameters (k0, k1, ... / l0, l1, ...)


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("uniform", "every layer gets base_width", {}, _uniform),
        Family(
            "cosine",
            "the Tapered LM schedule e + (s - e)(1 + cos(pi l / (L-1)))/2; start < end expands",
            {"start": 1.5, "end": 0.5},
            _cosine,
        ),
        Family("linear", "straight line from start to end", {"start": 1.5, "end": 0.5}, _linear),
        Family(
            "sigmoid",
            "sigmoid step from start to end around midpoint (relative depth) with steepness",
            {"start": 1.5, "end": 0.5, "steepness": 10.0, "midpoint": 0.5},
            _sigmoid,
        ),
        Family(
            "power",
            "(L - l)^exponent: front-loading strength (0 uniform, > 0 wider early, < 0 wider late)",
            {"exponent": 1.0},
            _power,
        ),
        Family(
            "groups",
            "the paper's controlled experiment: one third of the layers (early/middle/late) "
            "`factor` times wider than the rest",
            {"third": "early", "factor": 2.0},
            _groups,
            choices={"third": ("early", "middle", "late")},
        ),
        Family(
            "openelm",
            "OpenELM layer-wise scaling: FFN multipliers rising linearly from start to end",
            {"start": 0.5, "end": 4.0},
            _openelm,
        ),
        Family(
            "knots",
            "values k0..k{K-1} at evenly spaced depths, interpolated (linear or monotone cubic "
            "'pchip'); mode decreasing/increasing sorts them",
            {"mode": "free", "interp": "pchip"},
            _knots,
            choices={"mode": ("free", "decreasing", "increasing"), "interp": ("linear", "pchip")},
            indexed="k",
        ),
        Family(
            "bump",
            "1 + amplitude * Gaussian(centre, width) over relative depth: > 0 middle-heavy, < 0 hourglass",
            {"centre": 0.5, "width": 0.2, "amplitude": 1.0},
            _bump,
        ),
        Family("free", "softmax of one logit per layer (l0..l{L-1})", {}, _free, indexed="l"),
    )
}


def resolve_params(family: str, params: Mapping[str, Param]) -> dict[str, Param]:
    """The family's parameters with defaults filled in, checked for names, types and ranges."""
    fam = FAMILIES.get(family)
    if fam is None:
        raise ConfigError(f"unknown profile family {family!r}; choose one of: {', '.join(FAMILIES)}")
    out: dict[str, Param] = dict(fam.defaults)
    for key, value in params.items():
        indexed = bool(fam.indexed) and key[:1] == fam.indexed and key[1:].isdigit()
        if key not in fam.defaults and not indexed:
            allowed = list(fam.defaults) + ([f"{fam.indexed}0, {fam.indexed}1, ..."] if fam.indexed else [])
            raise ConfigError(f"family {family!r} has no parameter {key!r}; allowed: {', '.join(allowed) or 'none'}")
        if key in fam.choices:
            if value not in fam.choices[key]:
                raise ConfigError(
                    f"{family}: {key}={value!r} is not allowed; choose one of: {', '.join(fam.choices[key])}"
                )
            out[key] = value
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigError(f"{family}: parameter {key}={value!r} must be a finite number")
        out[key] = float(value)
    _check_ranges(family, out)
    return out


def _check_ranges(family: str, p: Mapping[str, Param]) -> None:
    def need(ok: bool, what: str) -> None:
        if not ok:
            raise ConfigError(f"{family}: {what}")

    for key in ("start", "end"):
        if key in p:
            need(float(p[key]) > 0, f"{key}={p[key]} must be > 0 (relative width)")
    if family == "groups":
        need(float(p["factor"]) > 0, f"factor={p['factor']} must be > 0")
    if family == "bump":
        need(float(p["width"]) > 0, f"width={p['width']} must be > 0")
        need(float(p["amplitude"]) > -1, f"amplitude={p['amplitude']} must be > -1 (widths stay positive)")
    if family == "sigmoid":
        need(float(p["steepness"]) > 0, f"steepness={p['steepness']} must be > 0")
    if family == "knots":
        k = _count(p, "k")
        need(k >= 1, "needs knot values k0, k1, ... (at least one)")
        need(
            sorted(int(key[1:]) for key in p if key[:1] == "k" and key[1:].isdigit()) == list(range(k)),
            "knot names must be k0..k{K-1} without gaps",
        )
        need(all(float(p[f"k{i}"]) > 0 for i in range(k)), "knot values must be > 0")


def relative_widths(family: str, n_layers: int, **params: Param) -> list[float]:
    """The family's real-valued relative widths for `n_layers` layers (before projection)."""
    resolved = resolve_params(family, params)
    return FAMILIES[family].fn(n_layers, resolved)


def profile(family: str, budget: Budget, **params: Param) -> tuple[int, ...]:
    """Integer per-layer widths of `family` with `params`, exactly on `budget`."""
    return project_to_budget(relative_widths(family, budget.n_layers, **params), budget)


# ----------------------------------------------------------------------------- spec


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProfileSpec(Config):
    """A family and its parameters: the unit a search samples and a trial trains.

    Text form: ``family[:param=value,...]`` e.g. ``cosine:start=1.5,end=0.5``; a family with
    a categorical first parameter also takes a bare value: ``groups:early``.
    """

    family: str = "uniform"
    params: dict[str, Param] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        resolve_params(self.family, self.params)

    def widths(self, budget: Budget) -> tuple[int, ...]:
        return profile(self.family, budget, **self.params)

    def resolved(self) -> ProfileSpec:
        """The same spec with every default written out."""
        return ProfileSpec(family=self.family, params=resolve_params(self.family, self.params))

    def __str__(self) -> str:
        if not self.params:
            return self.family
        items = ",".join(f"{k}={_fmt(v)}" for k, v in self.params.items())
        return f"{self.family}:{items}"

    @classmethod
    def parse(cls, text: str) -> ProfileSpec:
        family, _, rest = text.strip().partition(":")
        if family not in FAMILIES:
            raise ConfigError(f"unknown profile family {family!r} in {text!r}; choose one of: {', '.join(FAMILIES)}")
        params: dict[str, Param] = {}
        for i, item in enumerate(filter(None, (s.strip() for s in rest.split(",")))):
            key, eq, value = item.partition("=")
            if not eq:
                fam = FAMILIES[family]
                if i == 0 and fam.choices:
                    key, value = next(iter(fam.choices)), item
                else:
                    raise ConfigError(
                        f"malformed profile parameter {item!r} in {text!r}; write name=value, "
                        f"e.g. {family}:{','.join(f'{k}={_fmt(v)}' for k, v in FAMILIES[family].defaults.items())}"
                    )
            params[key.strip()] = _parse_value(value.strip())
        return cls(family=family, params=params)


def _parse_value(text: str) -> Param:
    try:
        return float(text)
    except ValueError:
        return text


def _fmt(v: Param) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


# ----------------------------------------------------------------------------- statistics


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
    xs = _depths(n)
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
        spearman=spearman(list(range(n)), list(widths)),
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
    c = [(1 + math.cos(math.pi * x)) / 2 for x in _depths(n)]
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
    """Spearman rank correlation with average ranks for ties; 0.0 when either side is constant."""
    ra, rb = _ranks(a), _ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return 0.0 if va == 0 or vb == 0 else cov / math.sqrt(va * vb)


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2
        i = j + 1
    return ranks
