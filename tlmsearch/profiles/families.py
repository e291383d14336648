"""Profile families: a few parameters -> real-valued relative widths over depth (pure math)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from tlmsearch.errors import ConfigError
from tlmsearch.profiles import joint
from tlmsearch.profiles.budget import Budget, project_to_budget
from tlmsearch.profiles.interp import depths
from tlmsearch.profiles.interp import mix as _mix
from tlmsearch.profiles.literature import CHECKS, crown, frame, middle, openelm, reverse

Param = float | str


def _uniform(n: int, p: Mapping[str, Any]) -> list[float]:
    return [1.0] * n


def _cosine(n: int, p: Mapping[str, Any]) -> list[float]:
    s, e = p["start"], p["end"]
    return [_mix(s, e, (1 - math.cos(math.pi * x)) / 2) for x in depths(n)]


def _linear(n: int, p: Mapping[str, Any]) -> list[float]:
    s, e = p["start"], p["end"]
    return [_mix(s, e, x) for x in depths(n)]


def _sigmoid(n: int, p: Mapping[str, Any]) -> list[float]:
    s, e, k, mid = p["start"], p["end"], p["steepness"], p["midpoint"]
    g0, g1 = _sig(-k * mid), _sig(k * (1 - mid))
    if g1 - g0 >= 1e-3:  # the direct formula, monotone in depth; exact enough at this span
        return [_mix(s, e, (_sig(k * (x - mid)) - g0) / (g1 - g0)) for x in depths(n)]
    return [_mix(s, e, _gentle_step(x, k, mid)) for x in depths(n)]


def _sig(z: float) -> float:
    """The logistic function; 0 where exp(-z) would overflow."""
    return 1.0 / (1.0 + math.exp(-z)) if z > -700.0 else 0.0


def _gentle_step(x: float, k: float, mid: float) -> float:
    """(sig(k(x - mid)) - sig(-k mid)) / (sig(k(1 - mid)) - sig(-k mid)) for a shallow sigmoid
    (span below 1e-3, i.e. steepness below about 0.004 as midpoint lies in [0, 1]).

    Subtracting two nearly equal sigmoids loses every digit there (steepness 1e-300 would give
    a flat profile instead of the straight line it tends to). Instead, from
    sig(a) - sig(b) = sinh((a-b)/2) / (2 cosh(a/2) cosh(b/2)), the step is
    sinh(kx/2)/sinh(k/2) * cosh(k(1-mid)/2)/cosh(k(x-mid)/2).
    """
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    h = 0.5 * k
    if h < 1e-8:  # sinh(hx)/sinh(h) = x and the cosh ratio = 1 to double precision
        return x
    # here h < 0.002 (a span below 1e-3 needs steepness below about 0.004): sinh and cosh of these
    # arguments are far from overflow, and each ratio is exact to the last digits
    step = math.sinh(h * x) / math.sinh(h) * math.cosh(h * (1.0 - mid)) / math.cosh(h * (x - mid))
    return min(1.0, step)


def _power(n: int, p: Mapping[str, Any]) -> list[float]:
    """(L - l)^exponent divided by its largest value (the projection ignores the scale), in log
    space so that no exponent overflows: each term is exp(exponent * log(ratio)) with
    exponent * log(ratio) <= 0."""
    a = p["exponent"]
    ref = float(n) if a > 0 else 1.0  # the largest base for a > 0, the smallest for a < 0
    return [1.0 if a == 0 else math.exp(a * math.log((n - i) / ref)) for i in range(n)]


def _groups(n: int, p: Mapping[str, Any]) -> list[float]:
    third = ("early", "middle", "late").index(p["third"])
    return [p["factor"] if (3 * i) // n == third else 1.0 for i in range(n)]


def _bump(n: int, p: Mapping[str, Any]) -> list[float]:
    c, w, a = p["centre"], p["width"], p["amplitude"]
    # z = (x - c) / w may be inf for a tiny width; exp(-inf) = 0 (layers away from the centre)
    return [1.0 + a * math.exp(-0.5 * _sq((x - c) / w)) for x in depths(n)]


def _sq(z: float) -> float:
    return z * z if abs(z) < 1e150 else math.inf


def _knots(n: int, p: Mapping[str, Any]) -> list[float]:
    ys = [float(p[f"k{i}"]) for i in range(_count(p, "k"))]
    if p["mode"] == "decreasing":
        ys = sorted(ys, reverse=True)
    elif p["mode"] == "increasing":
        ys = sorted(ys)
    if len(ys) == 1:
        return [1.0] * n
    # relative to the largest knot: the projection ignores the scale, and slopes of knots near
    # 1e308 would overflow; a knot below 1e-308 of the largest stays just above 0 (positive)
    top = max(ys)
    ys = [max(y / top, _TINY) for y in ys]
    xs = [i / (len(ys) - 1) for i in range(len(ys))]
    interp = _pchip if p["interp"] == "pchip" else _piecewise_linear
    low = min(ys)  # both interpolants stay within the knots' range; clip rounding excursions
    return [min(1.0, max(low, v)) for v in interp(xs, ys, depths(n))]


_TINY = 5e-324  # the smallest positive float


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
    """Monotone cubic (Fritsch-Carlson) interpolation: never overshoots the knots.

    Slopes: at an interior knot the weighted harmonic mean of the two secants when they share a
    sign, else 0 (a local extremum, or a flat secant on either side, stays flat there); at the two
    ends the end secant (so a flat end segment has slope 0 at both of its knots)."""
    k = len(xs)
    h = [xs[i + 1] - xs[i] for i in range(k - 1)]
    delta = [(ys[i + 1] - ys[i]) / h[i] for i in range(k - 1)]
    d = [0.0] * k
    d[0], d[-1] = delta[0], delta[-1]
    for i in range(1, k - 1):
        if delta[i - 1] * delta[i] > 0:
            w1, w2 = 2 * h[i] + h[i - 1], h[i] + 2 * h[i - 1]
            d[i] = (w1 + w2) / (w1 / delta[i - 1] + w2 / delta[i])
    out = []
    for x in at:
        i = min(k - 2, max(0, int(x * (k - 1))))
        t = (x - xs[i]) / h[i]
        h00, h10 = (1 + 2 * t) * (1 - t) ** 2, t * (1 - t) ** 2
        h01, h11 = t * t * (3 - 2 * t), t * t * (t - 1)
        out.append(h00 * ys[i] + h10 * h[i] * d[i] + h01 * ys[i + 1] + h11 * h[i] * d[i + 1])
    return out


def _bowtie(n: int, p: Mapping[str, Any]) -> list[float]:
    """Wide first and last layers narrowing smoothly to `ratio` x their width at relative depth
    `position` (Variable-Width Transformers' hourglass, there of the whole block, here of the MLP):
    half-cosine easings 1 -> ratio over [0, position] and ratio -> 1 over [position, 1]
    (`_check_bowtie` holds its ranges)."""
    r, c = p["ratio"], p["position"]
    out = []
    for x in depths(n):
        u = x / c if x <= c else (1.0 - x) / (1.0 - c)  # 0 at either end, 1 at the bottleneck
        out.append(1.0 - (1.0 - r) * (1.0 - math.cos(math.pi * u)) / 2.0)
    return out


# ----------------------------------------------------------------------------- each family's checks
# A family's `check` refuses its own out-of-range parameters (after names and types, which
# `resolve_params` checks for every family) with one line naming the family and the allowed range.


Check = Callable[[Mapping[str, Any]], None]


def _positive(family: str, *keys: str, why: str = "") -> Check:
    """The check that each of `keys` is > 0 (`why` says what the value is)."""

    def check(p: Mapping[str, Any]) -> None:
        for key in keys:
            if not float(p[key]) > 0:
                raise ConfigError(f"{family}: {key}={p[key]} must be > 0{f' ({why})' if why else ''}")

    return check


def _ends(family: str) -> Check:
    """start, end > 0: the relative widths of a family drawn from `start` to `end`."""
    return _positive(family, "start", "end", why="relative width")


def _all(*checks: Check) -> Check:
    """The checks one after the other (the first failure is the message)."""

    def check(p: Mapping[str, Any]) -> None:
        for one in checks:
            one(p)

    return check


def _check_sigmoid(p: Mapping[str, Any]) -> None:
    _ends("sigmoid")(p)
    if not float(p["steepness"]) > 0:
        raise ConfigError(f"sigmoid: steepness={p['steepness']} must be > 0")
    if not 0 <= float(p["midpoint"]) <= 1:
        raise ConfigError(f"sigmoid: midpoint={p['midpoint']} must lie in [0, 1] (relative depth)")


def _check_bump(p: Mapping[str, Any]) -> None:
    if not float(p["width"]) > 0:
        raise ConfigError(f"bump: width={p['width']} must be > 0")
    if not float(p["amplitude"]) > -1:
        raise ConfigError(f"bump: amplitude={p['amplitude']} must be > -1 (widths stay positive)")


def _check_knots(p: Mapping[str, Any]) -> None:
    k = _count(p, "k")
    if k < 1:
        raise ConfigError("knots: needs knot values k0, k1, ... (at least one)")
    if sorted(int(key[1:]) for key in p if key[:1] == "k" and key[1:].isdigit()) != list(range(k)):
        raise ConfigError("knots: knot names must be k0..k{K-1} without gaps")
    if not all(float(p[f"k{i}"]) > 0 for i in range(k)):
        raise ConfigError("knots: knot values must be > 0")


def _check_bowtie(p: Mapping[str, Any]) -> None:
    r, c = p["ratio"], p["position"]
    if not 0.0 < r <= 1.0:
        raise ConfigError(f"bowtie: ratio={r} must lie in (0, 1] (bottleneck width / end width)")
    if not 0.0 < c < 1.0:
        raise ConfigError(f"bowtie: position={c} must lie in (0, 1) (relative depth of the bottleneck)")


class Family(NamedTuple):
    """A profile family: its parameters with defaults, and the relative-width function."""

    name: str
    description: str
    defaults: dict[str, Param]
    fn: Callable[[int, Mapping[str, Any]], list[float]]
    choices: dict[str, tuple[str, ...]] = {}
    indexed: str = ""  # prefix of numbered parameters (k0, k1, ... / l0, l1, ...)
    check: Check | None = None  # the family's own range checks (None: every value of its type is valid)


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("uniform", "every layer gets base_width", {}, _uniform),
        Family(
            "cosine",
            "the Tapered LM schedule e + (s - e)(1 + cos(pi l / (L-1)))/2; start < end expands",
            {"start": 1.5, "end": 0.5},
            _cosine,
            check=_ends("cosine"),
        ),
        Family("linear", "straight line from start to end", {"start": 1.5, "end": 0.5}, _linear, check=_ends("linear")),
        Family(
            "sigmoid",
            "sigmoid step from start to end around midpoint (relative depth) with steepness",
            {"start": 1.5, "end": 0.5, "steepness": 10.0, "midpoint": 0.5},
            _sigmoid,
            check=_check_sigmoid,
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
            check=_positive("groups", "factor"),
        ),
        Family(
            "openelm",
            "OpenELM layer-wise scaling (arXiv 2404.14619): FFN multipliers rising linearly from start to end",
            {"start": 0.5, "end": 4.0},
            openelm,
            check=_ends("openelm"),
        ),
        Family(
            "reverse",
            "Reverse layer-wise scaling (arXiv 2509.06518): OpenELM's line turned around, start > end",
            {"start": 4.0, "end": 0.5},
            reverse,
            check=_all(_ends("reverse"), CHECKS["reverse"]),
        ),
        Family(
            "frame",
            "Framed layer-wise scaling (arXiv 2509.06518): OpenELM's line from start to end, the first and "
            "last layer at `frame`",
            {"start": 0.5, "end": 4.0, "frame": 4.0},
            frame,
            check=_all(_ends("frame"), CHECKS["frame"]),
        ),
        Family(
            "crown",
            "Crown layer-wise scaling (arXiv 2509.06518): linear from start up to peak at mid-depth, down to end; "
            "first and last layer at `frame`",
            {"start": 0.5, "peak": 4.0, "end": 0.5, "frame": 4.0},
            crown,
            check=_all(_ends("crown"), CHECKS["crown"]),
        ),
        Family(
            "middle",
            "middle-heavy (arXiv 2508.17734): the centred `fraction` of the layers carry the MLP, the rest "
            "`ends` x as wide (0 = the budget's thinnest)",
            {"fraction": 0.7, "ends": 0.0},
            middle,
            check=CHECKS["middle"],
        ),
        Family(
            "knots",
            "values k0..k{K-1} at evenly spaced depths, interpolated (linear or monotone cubic "
            "'pchip'); mode decreasing/increasing sorts them",
            {"mode": "free", "interp": "pchip"},
            _knots,
            choices={"mode": ("free", "decreasing", "increasing"), "interp": ("linear", "pchip")},
            indexed="k",
            check=_check_knots,
        ),
        Family(
            "bump",
            "1 + amplitude * Gaussian(centre, width) over relative depth: > 0 middle-heavy, < 0 hourglass",
            {"centre": 0.5, "width": 0.2, "amplitude": 1.0},
            _bump,
            check=_check_bump,
        ),
        Family("free", "softmax of one logit per layer (l0..l{L-1})", {}, _free, indexed="l"),
        Family(
            "bowtie",
            "hourglass after Variable-Width Transformers: wide first and last layers, a bottleneck of `ratio` "
            "x their width at relative depth `position`",
            {"ratio": 0.3, "position": 0.75},
            _bowtie,
            check=_check_bowtie,
        ),
        Family(
            joint.FAMILY,
            "joint architecture: mode mlp (MLP cosine start -> end), attention (+ query heads cosine "
            "heads_start -> heads_end) or block (+ block width bowtie from d_model to `ratio` at `position`, each "
            "block within 2 heads of it, the ends included, so one may be wider than d_model); exact budget, "
            "holding the uniform model's parameters (hold=params) or training FLOPs per token (hold=flops)",
            dict(joint.DEFAULTS),
            joint.mlp_shape,
            choices={"mode": joint.MODES, "hold": joint.HOLDS},
            check=_all(_ends(joint.FAMILY), joint.check),
        ),
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
    if fam.check is not None:
        fam.check(out)  # the family's own ranges
    return out


def relative_widths(family: str, n_layers: int, **params: Param) -> list[float]:
    """The family's real-valued relative widths for `n_layers` layers (before projection)."""
    resolved = resolve_params(family, params)
    return FAMILIES[family].fn(n_layers, resolved)


def profile(family: str, budget: Budget, **params: Param) -> tuple[int, ...]:
    """Integer per-layer widths of `family` with `params`, exactly on `budget`."""
    return project_to_budget(relative_widths(family, budget.n_layers, **params), budget)
