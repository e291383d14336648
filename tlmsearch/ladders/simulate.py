"""Ladders with a known answer, to check the trend test against the truth (pure numpy, vectorised:
10,000 ladders a cell in seconds).

Each simulated ladder has a true gain `intercept + slope * log10(C / C_0)` plus, at every point, an
offset drawn once from N(0, offset_sd^2) (what else differs between points: learning rate,
epochs, shape), and draws `seeds` paired log gains around it with the point's paired sd. It
reduces them to a mean and a standard error as the ladder's analysis does and applies a test:

- "new": `ladders.trend_model.calibrated` (what `fit_trend` does): random-effects line,
  Hartung-Knapp variance, the widest of t on k - 2 df and the pivots; "shown" only from `MIN_POINTS_SHOWN`
  points of `MIN_SEEDS_SHOWN` seeds;
- "legacy": the fit before issue 46 (`ladders.trend_legacy`), seed noise only.

It records how often a trend is "shown", how often p < alpha whatever the number of points (the
test alone), and for "new" whether the slope's and the extrapolation's intervals cover the truth.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tlmsearch.ladders import trend_model as tm
from tlmsearch.ladders.trend_legacy import legacy_p

METHODS = ("new", "legacy")


@dataclass(frozen=True)
class SimulationResult:
    ladders: int
    trend_rate: float  # share of ladders that report a trend ("shown")
    p_rate: float  # share with p < alpha (the test alone, before the rule on points and seeds)
    slope_coverage: float = math.nan  # share whose slope interval covers the true slope ("new" only)
    target_coverage: float = math.nan  # ... whose extrapolation interval covers the true gain at the target

    def tolerance(self, p: float) -> float:
        """Three Monte-Carlo standard errors of a rate near `p` over these ladders."""
        return 3.0 * math.sqrt(p * (1.0 - p) / self.ladders)


def simulate(
    compute: Sequence[float],
    sd: Sequence[float],
    *,
    seeds: int | Sequence[int],
    slope: float,
    offset_sd: float = 0.0,
    intercept: float = 0.01,
    target_compute: float | None = None,
    ladders: int = 2000,
    alpha: float = 0.05,
    draws: int = 400,
    seed: int = 0,
    method: str = "new",
    chunk: int = 500,
) -> SimulationResult:
    """Test `ladders` simulated ladders (points at `compute` FLOPs, paired sd `sd` per point,
    `seeds` paired seeds per point, point offsets of sd `offset_sd`) whose true gain is
    `intercept + slope * log10(C / compute[0])`; `draws`: pivot draws a ladder."""
    k = len(compute)
    if len(sd) != k:
        raise ValueError("compute and sd need one entry per point")
    if method not in METHODS:
        raise ValueError(f"method={method!r} is not allowed; choose one of: {', '.join(METHODS)}")
    if k < 3:
        raise ValueError(f"{k} points: a test of the slope needs at least 3")
    n = np.array([seeds] * k if isinstance(seeds, int) else list(seeds), float)
    if len(n) != k or n.min() < 2:
        raise ValueError("seeds: one count of at least 2 per point")
    x = np.log10(np.asarray(compute, float) / compute[0])
    x_t = np.array([math.log10((target_compute or compute[-1]) / compute[0])])
    truth = intercept + slope * x
    true_t = intercept + slope * float(x_t[0])
    eligible = k >= tm.MIN_POINTS_SHOWN and n.min() >= tm.MIN_SEEDS_SHOWN
    rng = np.random.default_rng(seed)
    below = covered = at_target = 0
    done = 0
    while done < ladders:
        size = min(chunk, ladders - done)
        means = truth + rng.normal(0.0, offset_sd, size=(size, k)) if offset_sd else np.broadcast_to(truth, (size, k))
        m = np.empty((size, k))
        v = np.empty((size, k))
        for j in range(k):
            d = means[:, j : j + 1] + rng.normal(0.0, sd[j], size=(size, int(n[j])))
            m[:, j] = d.mean(-1)
            v[:, j] = d.var(-1, ddof=1) / n[j]
        if method == "legacy":
            p = legacy_p(x, m, np.sqrt(v), n, draws=draws, rng=rng)
        else:
            f, p, crit_b, crit_t = tm.calibrated(x, m, v, n, x_t, alpha=alpha, draws=draws, rng=rng)
            crit_t = crit_t[:, 0]
            covered += int(np.count_nonzero(np.abs(f.slope - slope) <= crit_b * f.se_slope))
            at_target += int(np.count_nonzero(np.abs(f.at[:, 0] - true_t) <= crit_t * f.se_at[:, 0]))
        below += int(np.count_nonzero(p < alpha))
        done += size
    p_rate = below / ladders
    if method == "legacy":
        return SimulationResult(ladders, p_rate, p_rate)
    return SimulationResult(ladders, p_rate if eligible else 0.0, p_rate, covered / ladders, at_target / ladders)


__all__ = ["METHODS", "SimulationResult", "simulate"]
