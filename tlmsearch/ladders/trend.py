"""How a profile's gain moves with scale: a weighted fit of gain against log10(training FLOPs)
over the points of a ladder, with intervals that carry each point's uncertainty (pure numpy).

Input: one `LadderPoint` per (size x tokens per parameter) point, holding a profile's mean
paired log gain over a reference (nats: log ppl_reference - log ppl_profile, positive = the
profile is better), its standard error from the paired seeds and their number. The model is

    gain_i = a + b * log10(C_i) + noise_i,    noise_i ~ N(0, se_i^2)

fitted by weighted least squares with weights 1 / se_i^2. Two facts make the textbook interval
wrong here, and both are handled:

- each se_i is itself estimated from few seeds (often 2-6), and the weights are taken from the
  same estimates: treated as known they give intervals that cover a linear truth only 63-94 % of
  the time at 2-6 seeds and call a constant gain a trend 6-36 % of the time at alpha 0.05
  (simulated; bench/README.md section 15, `bench/bench_ladder.py`). The critical value therefore comes
  from a generalised pivotal quantity: each point's true sd is drawn from its fiducial
  distribution (se_i * sqrt(df_i / chi2_df_i)), data and estimated se are simulated from it,
  the whole fit is redone, and the quantile of |estimate - truth| / se over `draws` such ladders
  is the critical value (seeded: the same inputs give the same interval);
- the points need not lie on a line: with three or more points the variance is multiplied by
  max(1, Q / (k - 2)), Q the weighted residual sum of squares (the Knapp-Hartung adjustment
  truncated at one), inside the pivot too, so curvature the noise cannot explain widens the
  interval instead of being ignored.

Simulated (`tests/unit/ladders/test_ladder_simulation.py`; bench/README.md section 15 over 36
cells of 2,000 ladders): a gain linear in log-compute is covered 93-96 % of the time at a
nominal 95 %, and a constant gain is called a trend 0.029-0.067 of the time at alpha 0.05 (the
0.067 with 5 points of 2 seeds and a 10x fall of the paired sd up the ladder; at most 0.059
with 4 or more seeds). The extrapolation to a target compute is the same linear
combination evaluated there, with its own pivot; it says how far it reaches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tlmsearch.analysis.stats import Interval

DEFAULT_DRAWS = 4000  # simulated ladders behind one critical value
DEFAULT_SEED = 0
CRITICAL = ("pivot", "normal")


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

    def to_dict(self) -> dict[str, object]:
        return {
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
    span: float  # largest / smallest compute
    slope: Interval  # nats of log-perplexity gain per 10x of compute, at 1 - alpha
    at_largest: Interval  # the fitted gain (nats) at the largest point
    p_value: float  # of "slope = 0", from the same pivot
    dispersion: float  # Q / (k - 2) (1.0 when k = 2): > 1 means the points scatter beyond their noise
    alpha: float
    extrapolation: Extrapolation | None = None

    @property
    def shown(self) -> bool:
        """The slope's interval excludes zero (on its own; a ladder of several profiles adjusts
        with Holm, `ladder.summary`)."""
        return self.p_value < self.alpha

    def reach(self) -> str:
        return f"from {self.n_points} points over {self.span:.3g}x of compute"

    def to_dict(self) -> dict[str, object]:
        return {
            "n_points": self.n_points,
            "compute_span": self.span,
            "reach": self.reach(),
            "slope_per_decade": self.slope.to_dict(),
            "fitted_at_largest": self.at_largest.to_dict(),
            "p_value": self.p_value,
            "dispersion": self.dispersion,
            "alpha": self.alpha,
            "extrapolation": self.extrapolation.to_dict() if self.extrapolation else None,
        }


def check_points(points: Sequence[LadderPoint]) -> None:
    """Refuse what no line can be fitted to, in one line each (ValueError)."""
    if len(points) < 2:
        raise ValueError(f"a trend needs at least 2 points of the ladder; {len(points)} given")
    for p in points:
        if p.n < 2:
            raise ValueError(f"point {p.point}: {p.n} paired seed(s); a standard error needs at least 2")
        if not (math.isfinite(p.gain) and math.isfinite(p.se) and p.se > 0):
            raise ValueError(f"point {p.point}: gain {p.gain} with standard error {p.se}: needs a finite se > 0")
        if not (math.isfinite(p.compute) and p.compute > 0):
            raise ValueError(f"point {p.point}: compute {p.compute} FLOPs must be positive")
    if len({p.compute for p in points}) < 2:
        raise ValueError("every point of the ladder has the same compute: no trend can be fitted")


def _fit(x: np.ndarray, m: np.ndarray, se: np.ndarray, x0: float) -> tuple[np.ndarray, ...]:
    """WLS of m on x (last axis: points; leading axes: simulated ladders). Returns the slope,
    the fitted value at `x0` and their standard errors (sandwich, times the dispersion)."""
    w = 1.0 / se**2
    sw = w.sum(-1, keepdims=True)
    xbar = (w * x).sum(-1, keepdims=True) / sw
    sxx = (w * (x - xbar) ** 2).sum(-1, keepdims=True)
    c = w * (x - xbar) / sxx  # slope = sum c_i m_i
    g = w / sw + (x0 - xbar) * c  # fitted value at x0 = sum g_i m_i
    slope = (c * m).sum(-1)
    at = (g * m).sum(-1)
    var_s = (c**2 * se**2).sum(-1)
    var_a = (g**2 * se**2).sum(-1)
    k = x.shape[-1]
    if k > 2:
        mean = (w * m).sum(-1, keepdims=True) / sw
        resid = m - mean - slope[..., None] * (x - xbar)
        q = (w * resid**2).sum(-1) / (k - 2)
        disp = np.maximum(1.0, q)
    else:
        disp = np.ones_like(slope)
    return slope, at, np.sqrt(var_s * disp), np.sqrt(var_a * disp), disp


def fit_trend(
    points: Sequence[LadderPoint],
    *,
    alpha: float = 0.05,
    target: Target | None = None,
    draws: int = DEFAULT_DRAWS,
    seed: int = DEFAULT_SEED,
    critical: str = "pivot",
) -> Trend:
    """The weighted line through `points` with (1 - alpha) intervals for its slope (per decade of
    compute), its value at the largest point and, given `target`, at the target's compute.

    `critical`: "pivot" (the default, see the module docstring) or "normal", the textbook
    interval that takes each se as known (kept for the simulations that show why it is not used)."""
    check_points(points)
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha={alpha} must lie in (0, 0.5)")
    if critical not in CRITICAL:
        raise ValueError(f"critical={critical!r} is not allowed; choose one of: {', '.join(CRITICAL)}")
    x = np.log10(np.array([p.compute for p in points], float))
    m = np.array([p.gain for p in points], float)
    se = np.array([p.se for p in points], float)
    df = np.array([p.df for p in points], float)
    top = float(x.max())
    x0 = math.log10(target.compute) if target is not None else top
    slope, at0, s_slope, s_at0, disp = _fit(x, m, se, x0)
    _, at_top, _, s_top, _ = _fit(x, m, se, top)

    rng = np.random.default_rng(seed)
    k = len(points)
    sigma = se * np.sqrt(df / rng.chisquare(df, size=(draws, k)))  # fiducial draws of each point's sd
    noise = rng.normal(0.0, sigma)  # each point's mean minus the truth (any line: the pivot ignores it)
    se_star = sigma * np.sqrt(rng.chisquare(df, size=(draws, k)) / df)
    b_s, a0_s, sb_s, sa0_s, _ = _fit(x, noise, se_star, x0)
    _, top_s, _, stop_s, _ = _fit(x, noise, se_star, top)
    piv_b, piv_a0, piv_top = np.abs(b_s / sb_s), np.abs(a0_s / sa0_s), np.abs(top_s / stop_s)
    level = 1.0 - alpha
    crit_b, crit_a0, crit_top = (float(np.quantile(p, level)) for p in (piv_b, piv_a0, piv_top))
    t_obs = abs(float(slope)) / float(s_slope)
    p_value = float((1 + np.count_nonzero(piv_b >= t_obs)) / (draws + 1))
    if critical == "normal":
        from statistics import NormalDist

        crit_b = crit_a0 = crit_top = NormalDist().inv_cdf(1.0 - alpha / 2.0)
        p_value = 2.0 * (1.0 - NormalDist().cdf(t_obs))

    def interval(est: float, s: float, crit: float) -> Interval:
        return Interval(est, est - crit * s, est + crit * s, k, level)

    trend = Trend(
        n_points=k,
        span=float(10 ** (x.max() - x.min())),
        slope=interval(float(slope), float(s_slope), crit_b),
        at_largest=interval(float(at_top), float(s_top), crit_top),
        p_value=p_value,
        dispersion=float(disp),
        alpha=alpha,
    )
    if target is None:
        return trend
    log_gain = interval(float(at0), float(s_at0), crit_a0)
    gain = Interval(math.expm1(log_gain.estimate), math.expm1(log_gain.low), math.expm1(log_gain.high), k, level)
    decades = x0 - top
    where = (
        f"lies {decades:.2g} decades of compute beyond the largest point: an extrapolation, not a measurement"
        if decades > 0.05
        else "lies within the ladder's compute"
        if x0 >= x.min() - 0.05
        else f"lies {-decades:.2g} decades below the largest point"
    )
    span = f"{10 ** x.min():.3g}-{10**top:.3g} FLOPs"
    reach = f"{trend.reach()} ({span}); the target {target.name} ({target.compute:.3g} FLOPs) {where}"
    from dataclasses import replace

    return replace(trend, extrapolation=Extrapolation(target, log_gain, gain, decades, reach))


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


__all__ = ["CRITICAL", "DEFAULT_DRAWS", "Extrapolation", "LadderPoint", "Target", "Trend", "check_points", "fit_trend"]
