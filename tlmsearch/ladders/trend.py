"""How a profile's gain moves with scale: a line of gain against log10(training FLOPs) over the
points of a ladder, with intervals that hold when the points scatter (pure numpy + scipy).

Input: one `LadderPoint` per point of the ladder, holding a profile's mean paired log gain over a
reference (nats: log ppl_reference - log ppl_profile, positive = the profile is better), its
standard error from the paired seeds and their number. The model (`ladders.trend_model`) is a
random-effects line: each point may sit off the line by an offset of sd tau (its learning rate,
its epochs, anything but compute that differs between points), estimated from the points'
scatter; the variance is Hartung-Knapp's, t on k - 2 degrees of freedom, and the critical value
never below what the seed-estimated standard errors allow (a generalised pivot). A trend can be
"shown" only from at least 4 points of at least 4 paired seeds each; fewer is a descriptive fit
(its interval printed, never called a trend). With 2 points there is no interval at all.

Simulated against known truth (`bench/bench_ladder.py`, bench/README.md section 15): with no
trend and point offsets of sd 0, 0.005, 0.01 and 0.02 nats the test says "shown" at most alpha
plus the Monte-Carlo tolerance; the fit before issue 46 (`ladders.trend_legacy`) said so in
20-55 % of such ladders at 3 points. The extrapolation to a target compute is the same line
evaluated there, with the same model's interval (its own pivot, never below its t interval); one
more than a decade beyond the data says so first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from tlmsearch.analysis.stats import Interval
from tlmsearch.ladders import trend_model as tm
from tlmsearch.ladders.trend_model import DEFAULT_DRAWS, MIN_POINTS_SHOWN, MIN_SEEDS_SHOWN

DEFAULT_SEED = 0
BEYOND_DECADES = 1.0  # an extrapolation farther than this beyond the data says so first


@dataclass(frozen=True)
class LadderPoint:
    """One profile's paired gain over a reference at one point of the ladder."""

    point: str  # the point's name
    compute: float  # training FLOPs of one run at this point (every profile of a budget: the same)
    gain: float  # mean over paired seeds of log ppl_reference - log ppl_profile (nats)
    se: float  # its standard error
    n: int  # paired seeds
    params: float = math.nan  # non-embedding parameters
    tokens_per_param: float = math.nan
    layers: int = 0  # the point's depth (a depth arm's axis)

    @property
    def df(self) -> int:
        return self.n - 1


@dataclass(frozen=True)
class Target:
    """Where to extrapolate: a name ("440m", "760m") and its training FLOPs."""

    name: str
    compute: float
    params: float = math.nan
    tokens_per_param: float = math.nan
    how: str = ""  # how the compute was counted


@dataclass(frozen=True)
class Extrapolation:
    target: Target
    log_gain: Interval  # nats, at 1 - alpha
    gain: Interval  # relative perplexity gain, expm1 of log_gain
    decades: float  # log10(target compute / largest point's compute); > 0: beyond the ladder
    reach: str  # "from N points over X x of compute; the target lies D decades beyond ..."

    @property
    def far(self) -> bool:
        """More than `BEYOND_DECADES` of compute beyond the largest point."""
        return self.decades > BEYOND_DECADES

    def headline(self) -> str:
        """'extrapolated 6.1 decades of compute beyond the data to 440m: -5.4 % perplexity [-61 %,
        +128 %] at 95 %' (the distance first when it is more than a decade)."""
        g = self.gain
        where = f"extrapolated {self.decades:.2g} decades of compute beyond the data to" if self.far else "at"
        return (
            f"{where} {self.target.name}: {100 * g.estimate:+.1f} % perplexity [{_pct_end(g.low)}, "
            f"{_pct_end(g.high)}] at {100 * g.confidence:.0f} %"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "headline": self.headline(),
            "target": self.target.name,
            "compute": self.target.compute,
            "params": _finite(self.target.params),
            "tokens_per_param": _finite(self.target.tokens_per_param),
            "how": self.target.how,
            "log_gain": self.log_gain.to_dict(),
            "gain": self.gain.to_dict(),
            "decades_beyond": self.decades,
            "reach": self.reach,
        }


@dataclass(frozen=True)
class Trend:
    """The fitted line of one profile's gain against log10(compute)."""

    n_points: int
    span: float  # largest / smallest compute (depth: layers)
    slope: Interval  # nats of log-perplexity gain per 10x of compute (depth: per doubling of layers), at 1 - alpha
    at_largest: Interval  # the fitted gain (nats) at the largest point
    p_value: float  # of "slope = 0" (nan with 2 points)
    dispersion: float  # Hartung-Knapp's q = sum w r^2 / (k - 2) before its floor (nan with 2 points)
    tau: float  # the between-point offsets' estimated sd (nats; nan with 2 points)
    alpha: float
    descriptive: str = ""  # why no trend can be shown from these points ("" when one can)
    extrapolation: Extrapolation | None = None
    axis: str = "compute"  # what the line is against: log10 compute, or log2 layers ("depth")

    @property
    def df(self) -> int:
        return self.n_points - 2

    @property
    def shown(self) -> bool:
        """The slope's interval excludes zero and the points are enough to show a trend (on its
        own; a ladder of several profiles adjusts with Holm, `ladder.summary`)."""
        return not self.descriptive and self.p_value < self.alpha

    def reach(self) -> str:
        return f"from {self.n_points} points over {self.span:.3g}x of {'depth' if self.axis == 'depth' else 'compute'}"

    @property
    def unit(self) -> str:
        return "nats per doubling of depth" if self.axis == "depth" else "nats per 10x of compute"

    def to_dict(self) -> dict[str, object]:
        return {
            "n_points": self.n_points,
            "compute_span": self.span,
            "reach": self.reach(),
            "axis": self.axis,
            "slope": self.slope.to_dict(),
            **({"slope_per_decade": self.slope.to_dict()} if self.axis == "compute" else {}),
            "unit": self.unit,
            "fitted_at_largest": self.at_largest.to_dict(),
            "p_value": self.p_value,
            "dispersion": self.dispersion,
            "tau": self.tau,
            "df": self.df,
            "test": TEST,
            "descriptive": self.descriptive or None,
            "alpha": self.alpha,
            "extrapolation": self.extrapolation.to_dict() if self.extrapolation else None,
        }


TEST = (
    "random-effects line (DerSimonian-Laird tau^2), Hartung-Knapp variance floored at one; the widest of t on "
    "k - 2 df and pivots over the seed-estimated standard errors at tau^2 and at its Q-profile upper end"
)


AXES = ("compute", "depth")


def check_points(points: Sequence[LadderPoint], axis: str = "compute") -> None:
    """Refuse what no line can be fitted to, in one line each (ValueError)."""
    if axis not in AXES:
        raise ValueError(f"axis={axis!r} is not allowed; choose one of: {', '.join(AXES)}")
    if len(points) < 2:
        raise ValueError(f"a trend needs at least 2 points of the ladder; {len(points)} given")
    for p in points:
        if p.n < 2:
            raise ValueError(f"point {p.point}: {p.n} paired seed(s); a standard error needs at least 2")
        if not (math.isfinite(p.gain) and math.isfinite(p.se) and p.se > 0):
            raise ValueError(f"point {p.point}: gain {p.gain} with standard error {p.se}: needs a finite se > 0")
        if not (math.isfinite(p.compute) and p.compute > 0):
            raise ValueError(f"point {p.point}: compute {p.compute} FLOPs must be positive")
    if axis == "depth":
        if any(p.layers < 1 for p in points) or len({p.layers for p in points}) < 2:
            raise ValueError("a trend against depth needs points of at least 2 different depths (layers >= 1)")
    elif len({p.compute for p in points}) < 2:
        raise ValueError("every point of the ladder has the same compute: no trend can be fitted")


def descriptive_reason(points: Sequence[LadderPoint]) -> str:
    """Why these points cannot show a trend ("" when they can)."""
    k = len(points)
    if k < MIN_POINTS_SHOWN:
        return (
            f"descriptive only: {k} points (a trend can be shown from {MIN_POINTS_SHOWN} points of at least "
            f"{MIN_SEEDS_SHOWN} paired seeds each)"
        )
    few = [p.point for p in points if p.n < MIN_SEEDS_SHOWN]
    if few:
        return (
            f"descriptive only: fewer than {MIN_SEEDS_SHOWN} paired seeds at {', '.join(few)} (a trend can be "
            f"shown from {MIN_POINTS_SHOWN} points of at least {MIN_SEEDS_SHOWN} paired seeds each)"
        )
    return ""


def fit_trend(
    points: Sequence[LadderPoint],
    *,
    alpha: float = 0.05,
    target: Target | None = None,
    draws: int = DEFAULT_DRAWS,
    seed: int = DEFAULT_SEED,
    axis: str = "compute",
) -> Trend:
    """The line through `points` with (1 - alpha) intervals for its slope (per decade of
    compute), its value at the largest point and, given `target`, at the target's compute
    (`ladders.trend_model`; seeded: the same inputs give the same interval)."""
    check_points(points, axis)
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha={alpha} must lie in (0, 0.5)")
    if axis == "depth":
        if target is not None:
            raise ValueError("a trend against depth has no compute target: target must be None")
        x = np.log2(np.array([p.layers for p in points], float))
    else:
        x = np.log10(np.array([p.compute for p in points], float))
    m = np.array([p.gain for p in points], float)
    v = np.array([p.se for p in points], float) ** 2
    n = np.array([p.n for p in points], float)
    k = len(points)
    top = float(x.max())
    x0 = np.array([top, math.log10(target.compute) if target is not None else top])
    level = 1.0 - alpha
    if k == 2:
        f = tm.line_through(x, m, v, x0)
        crit_b = crit_top = crit_t = math.inf
        p_value = math.nan
    else:
        rng = np.random.default_rng(seed)
        f, p, c_b, c_at = tm.calibrated(x, m, v, n, x0, alpha=alpha, draws=draws, rng=rng)
        crit_b, crit_top, crit_t = float(c_b), float(c_at[0]), float(c_at[1])
        p_value = float(p)

    def interval(est: float, s: float, crit: float) -> Interval:
        half = crit * s if math.isfinite(s) else math.inf
        return Interval(est, est - half, est + half, k, level)

    trend = Trend(
        n_points=k,
        span=float(2 ** (x.max() - x.min()) if axis == "depth" else 10 ** (x.max() - x.min())),
        slope=interval(float(f.slope), float(f.se_slope), crit_b),
        at_largest=interval(float(f.at[0]), float(f.se_at[0]), crit_top),
        p_value=p_value,
        dispersion=float(f.q),
        tau=float(np.sqrt(f.tau2)),
        alpha=alpha,
        descriptive=descriptive_reason(points),
        axis=axis,
    )
    if target is None:
        return trend
    log_gain = interval(float(f.at[1]), float(f.se_at[1]), crit_t)
    gain = Interval(math.expm1(log_gain.estimate), math.expm1(log_gain.low), math.expm1(log_gain.high), k, level)
    decades = float(x0[1]) - top
    where = (
        f"lies {decades:.2g} decades of compute beyond the largest point: an extrapolation, not a measurement"
        if decades > 0.05
        else "lies within the ladder's compute"
        if x0[1] >= x.min() - 0.05
        else f"lies {-decades:.2g} decades below the largest point"
    )
    span = f"{10 ** x.min():.3g}-{10**top:.3g} FLOPs"
    reach = f"{trend.reach()} ({span}); the target {target.name} ({target.compute:.3g} FLOPs) {where}"
    return replace(trend, extrapolation=Extrapolation(target, log_gain, gain, decades, reach))


def _pct_end(x: float) -> str:
    return f"{100 * x:+.1f} %" if math.isfinite(x) else ("-inf" if x < 0 else "+inf")


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


__all__ = [
    "BEYOND_DECADES",
    "DEFAULT_DRAWS",
    "MIN_POINTS_SHOWN",
    "MIN_SEEDS_SHOWN",
    "AXES",
    "TEST",
    "Extrapolation",
    "LadderPoint",
    "Target",
    "Trend",
    "check_points",
    "descriptive_reason",
    "fit_trend",
]
