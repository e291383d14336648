"""The ladder's trend model and its test, vectorised over simulated ladders (pure numpy + scipy).

Each point i of a ladder gives a mean paired log gain m_i with an estimated sampling variance
v_i = se_i^2 from n_i paired seeds. The points need not lie on a line even without noise: each
point differs in more than its compute (its learning rate, its length in epochs, its shape), so
the model carries a between-point offset u_i ~ N(0, tau^2):

    m_i = a + b * x_i + u_i + e_i,    e_i ~ N(0, sigma_i^2 / n_i),    x_i = log10(C_i)

- tau^2 by DerSimonian-Laird's moment estimator for a meta-regression (Q_E of the fixed-effect
  weighted fit against its k - 2 degrees of freedom, floored at 0);
- the line by weighted least squares with weights 1 / (v_i + tau^2);
- its variance by Hartung-Knapp: the model-based variance times q = sum w_i r_i^2 / (k - 2),
  floored at one (Knapp & Hartung 2003's ad hoc truncation; the untruncated q at k = 4 calls a
  flat gain a trend 6-10 % of the time when the seed-estimated v_i weight the points wrongly,
  bench/README.md section 15), t on k - 2 degrees of freedom;
- each v_i is itself estimated from n_i seeds (often 3-6) and tau^2 from k - 2 degrees of
  freedom: the critical value is the largest of the t quantile and two generalised pivots over
  the v_i (each point's sigma drawn from its fiducial distribution v_i (n_i - 1) / chi2_{n_i - 1},
  data and v_i simulated, the whole fit redone), one at DerSimonian-Laird's tau^2 and one at the
  upper end of its one-sided 90 % Q-profile interval (the tau^2 at which Q = chi2_{k-2}(0.10));
  the p-value is the largest of the three. The pivot at the estimate alone called a flat gain a
  trend 6.5 % of the time at 6 points whose paired sd falls 16x (bench/README.md section 15).

So the interval is never shorter than the t interval of the random-effects model. Calibrated
against known truth in `bench/bench_ladder.py` (bench/README.md section 15): with at least 4
points of at least 4 paired seeds, a flat gain is called a trend at most alpha + the
Monte-Carlo tolerance at point offsets of sd 0 to 0.02 nats; fewer points or seeds are printed
as a descriptive fit, never as a trend shown (`MIN_POINTS_SHOWN`, `MIN_SEEDS_SHOWN`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

MIN_POINTS_SHOWN = 4  # fewer points: a descriptive fit, never "shown"
MIN_SEEDS_SHOWN = 4  # fewer paired seeds at any point: the same
DEFAULT_DRAWS = 4000  # pivot draws behind one critical value
TAU2_LEVEL = 0.9  # the second pivot's tau^2: the upper end of a one-sided 90 % Q-profile interval


class Fit(NamedTuple):
    """One fit per leading index (arrays over simulated ladders, or 0-d for one ladder)."""

    slope: np.ndarray
    se_slope: np.ndarray
    at: np.ndarray  # fitted value at each x0 (last axis)
    se_at: np.ndarray
    tau2: np.ndarray  # between-point variance (nats^2)
    q: np.ndarray  # Hartung-Knapp's factor before its floor: > 1 means more scatter than the model


def _wls(x: np.ndarray, m: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, ...]:
    sw = w.sum(-1, keepdims=True)
    xbar = (w * x).sum(-1, keepdims=True) / sw
    sxx = (w * (x - xbar) ** 2).sum(-1, keepdims=True)
    slope = (w * (x - xbar) * m).sum(-1, keepdims=True) / sxx
    mbar = (w * m).sum(-1, keepdims=True) / sw
    resid = m - mbar - slope * (x - xbar)
    return slope[..., 0], mbar[..., 0], xbar[..., 0], sw[..., 0], sxx[..., 0], (w * resid**2).sum(-1)


def dl_tau2(x: np.ndarray, m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """DerSimonian-Laird's tau^2 of a weighted line: (Q_E - (k - 2)) / tr(P), floored at 0, where
    tr(P) = sum w - tr((X'WX)^-1 X'W^2 X) for the design X = [1, x]."""
    k = x.shape[-1]
    w = 1.0 / v
    q_e = _wls(x, m, w)[-1]
    w2 = w * w
    s0, s1, s2 = w.sum(-1), (w * x).sum(-1), (w * x * x).sum(-1)
    t0, t1, t2 = w2.sum(-1), (w2 * x).sum(-1), (w2 * x * x).sum(-1)
    trace = s0 - (s2 * t0 - 2.0 * s1 * t1 + s0 * t2) / (s0 * s2 - s1 * s1)
    return np.maximum(0.0, (q_e - (k - 2)) / trace)


def re_fit(x: np.ndarray, m: np.ndarray, v: np.ndarray, x0: np.ndarray) -> Fit:
    """The random-effects line with Hartung-Knapp's variance (floored at one) over the last axis
    of `m` and `v` (points); `x` (k,) the points' log10 compute, `x0` (j,) where to evaluate it.
    Needs k >= 3 (k - 2 residual degrees of freedom)."""
    k = x.shape[-1]
    tau2 = dl_tau2(x, m, v)
    w = 1.0 / (v + tau2[..., None])
    slope, mbar, xbar, sw, sxx, rss = _wls(x, m, w)
    q = rss / (k - 2)
    scale = np.maximum(q, 1.0)
    at = mbar[..., None] + slope[..., None] * (x0 - xbar[..., None])
    se_at = np.sqrt(scale[..., None] * (1.0 / sw[..., None] + (x0 - xbar[..., None]) ** 2 / sxx[..., None]))
    return Fit(slope, np.sqrt(scale / sxx), at, se_at, tau2, q)


def line_through(x: np.ndarray, m: np.ndarray, v: np.ndarray, x0: np.ndarray) -> Fit:
    """Two points: the line through them (weighted), no residual degree of freedom, so no
    interval (standard errors infinite), no tau^2."""
    w = 1.0 / v
    slope, mbar, xbar, _, _, _ = _wls(x, m, w)
    at = mbar[..., None] + slope[..., None] * (x0 - xbar[..., None])
    inf = np.full_like(slope, np.inf)
    return Fit(slope, inf, at, np.full_like(at, np.inf), np.full_like(slope, np.nan), np.full_like(slope, np.nan))


def tau2_upper(x: np.ndarray, m: np.ndarray, v: np.ndarray, level: float = TAU2_LEVEL) -> np.ndarray:
    """The upper end of tau^2's one-sided `level` Q-profile interval: the tau^2 >= 0 at which the
    generalised Q = sum (m_i - fit_i)^2 / (v_i + tau^2) equals chi2_{k-2}'s (1 - level) quantile
    (0 when Q(0) is below it already; bisection in log tau^2 over [1e-12, 1] nats^2)."""
    from scipy import stats

    k = x.shape[-1]
    c = float(stats.chi2.ppf(1.0 - level, k - 2))
    lo = np.full(m.shape[:-1], math.log(1e-12))
    hi = np.full(m.shape[:-1], 0.0)
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        above = _wls(x, m, 1.0 / (v + np.exp(mid)[..., None]))[-1] > c
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    at_zero = _wls(x, m, 1.0 / v)[-1]
    return np.where(at_zero <= c, 0.0, np.exp(0.5 * (lo + hi)))


def pivots(
    x: np.ndarray, v: np.ndarray, n: np.ndarray, tau2: np.ndarray, x0: np.ndarray, draws: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """|estimate - truth| / se of the slope (..., draws) and of each fitted value (..., draws, j)
    over `draws` ladders simulated from each point's fiducial sigma and the estimated tau^2."""
    df = n - 1.0
    shape = (*v.shape[:-1], draws, v.shape[-1])
    var = v[..., None, :] * df / rng.chisquare(df, size=shape)  # fiducial draws of sigma_i^2 / n_i
    m = rng.normal(0.0, 1.0, size=shape) * np.sqrt(var + tau2[..., None, None])
    v_star = var * rng.chisquare(df, size=shape) / df
    f = re_fit(x, m, v_star, x0)
    return np.abs(f.slope / f.se_slope), np.abs(f.at / f.se_at)


def pivot_p(t_obs: np.ndarray, piv: np.ndarray) -> np.ndarray:
    """The share of pivot draws at least as extreme as `t_obs` ((1 + count) / (draws + 1))."""
    return (1.0 + (piv >= t_obs[..., None]).sum(-1)) / (piv.shape[-1] + 1.0)


def t_p(t_obs: np.ndarray, df: int) -> np.ndarray:
    from scipy import stats

    return 2.0 * stats.t.sf(np.abs(t_obs), df)


def calibrated(
    x: np.ndarray,
    m: np.ndarray,
    v: np.ndarray,
    n: np.ndarray,
    x0: np.ndarray,
    *,
    alpha: float,
    draws: int,
    rng: np.random.Generator,
) -> tuple[Fit, np.ndarray, np.ndarray, np.ndarray]:
    """The fit over the last axis of m, v (k >= 3), the p-value of "slope = 0" and the critical
    values of the slope (...) and of the fitted values at x0 (..., j): each the largest of t on
    k - 2 df and the pivots at DerSimonian-Laird's tau^2 and at its Q-profile upper end."""
    from scipy import stats

    k = x.shape[-1]
    f = re_fit(x, m, v, x0)
    t_obs = np.abs(f.slope / f.se_slope)
    level = 1.0 - alpha
    t_crit = float(stats.t.ppf(1.0 - alpha / 2.0, k - 2))
    p = t_p(t_obs, k - 2)
    crit_b = np.full(f.slope.shape, t_crit)
    crit_at = np.full(f.at.shape, t_crit)
    for tau2 in (f.tau2, np.maximum(f.tau2, tau2_upper(x, m, v))):
        piv_b, piv_at = pivots(x, v, n, tau2, x0, draws, rng)
        p = np.maximum(p, pivot_p(t_obs, piv_b))
        crit_b = np.maximum(crit_b, np.quantile(piv_b, level, axis=-1))
        crit_at = np.maximum(crit_at, np.quantile(piv_at, level, axis=-2))
    return f, p, crit_b, crit_at


__all__ = [
    "DEFAULT_DRAWS",
    "MIN_POINTS_SHOWN",
    "MIN_SEEDS_SHOWN",
    "Fit",
    "dl_tau2",
    "line_through",
    "pivot_p",
    "pivots",
    "re_fit",
    "t_p",
    "TAU2_LEVEL",
    "calibrated",
    "tau2_upper",
]
