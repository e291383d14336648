"""Ladders with a known answer, to check `fit_trend` against the truth (pure numpy).

Each simulated ladder draws, at every point, `seeds` paired log gains from
N(intercept + slope * log10(C / C_0), sd_i^2), reduces them to a mean and a standard error as
the ladder's analysis does, fits the trend and records whether the slope's interval covers the
true slope, whether the extrapolation's interval covers the true gain at the target, and whether
a trend was reported (the slope's interval excludes zero).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tlmsearch.ladders.trend import LadderPoint, Target, fit_trend


@dataclass(frozen=True)
class SimulationResult:
    ladders: int
    slope_coverage: float  # share of ladders whose slope interval covers the true slope
    target_coverage: float  # ... whose extrapolation interval covers the true gain at the target
    trend_rate: float  # ... that report a trend (slope interval excludes zero)

    def tolerance(self, p: float) -> float:
        """Three Monte-Carlo standard errors of a rate near `p` over these ladders."""
        return 3.0 * math.sqrt(p * (1.0 - p) / self.ladders)


def simulate(
    compute: Sequence[float],
    sd: Sequence[float],
    *,
    seeds: int | Sequence[int],
    slope: float,
    intercept: float = 0.01,
    target_compute: float | None = None,
    ladders: int = 2000,
    alpha: float = 0.05,
    draws: int = 1000,
    seed: int = 0,
    critical: str = "pivot",
) -> SimulationResult:
    """Fit `ladders` simulated ladders (points at `compute` FLOPs, paired sd `sd` per point,
    `seeds` paired seeds per point) whose true gain is `intercept + slope * log10(C / compute[0])`;
    `critical` as in `fit_trend`."""
    k = len(compute)
    if len(sd) != k:
        raise ValueError("compute and sd need one entry per point")
    n = [int(seeds)] * k if isinstance(seeds, int) else [int(s) for s in seeds]
    x = np.log10(np.asarray(compute, float) / compute[0])
    truth = intercept + slope * x
    x_target = math.log10((target_compute or compute[-1]) / compute[0])
    true_target = intercept + slope * x_target
    target = Target("target", float(target_compute or compute[-1]))
    rng = np.random.default_rng(seed)
    covered = at_target = trends = 0
    for i in range(ladders):
        pts = []
        for j in range(k):
            d = rng.normal(truth[j], sd[j], size=n[j])
            se = float(d.std(ddof=1) / math.sqrt(n[j]))
            pts.append(LadderPoint(point=f"p{j}", compute=float(compute[j]), gain=float(d.mean()), se=se, n=n[j]))
        fit = fit_trend(pts, alpha=alpha, target=target, draws=draws, seed=seed + 1 + i, critical=critical)
        covered += fit.slope.covers(slope)
        trends += fit.shown
        assert fit.extrapolation is not None
        at_target += fit.extrapolation.log_gain.covers(true_target)
    return SimulationResult(ladders, covered / ladders, at_target / ladders, trends / ladders)


__all__ = ["SimulationResult", "simulate"]
