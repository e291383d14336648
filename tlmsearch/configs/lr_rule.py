"""The learning-rate calibration's choice from paired seeds (pure, no numpy).

Input: the rates of a grid (ascending) and, for each rate, the final `val_loss` of the same
seeds (seed k at every rate: the differences between rates are paired). A loss that is not
finite (a diverged or failed run) makes its rate the worst (its mean is +inf).

- **The best mean** (`best_index`): the lowest mean over the seeds, equal means going to the
  lower rate (the safer one when training gets longer).
- **The chosen rate** (`chosen_log2`): with one seed, the best rate itself (the rule before
  seeds existed, so a run directory written then reads with the rate it trained at). With two
  or more, when the best mean has a finite neighbour on each side, the vertex of the parabola
  in log2(rate) through the three means (a quadratic through the best and its neighbours);
  because the middle mean is the lowest, the vertex lies within half a grid step of the best
  rate, so the fit refines the grid's choice and never leaves its bracket. At an edge of the
  grid, or beside a diverged rate, the best rate itself.
- **Its uncertainty** (`bootstrap_interval`): the same choice recomputed on `DRAWS` parametric
  bootstrap replicates (a generator seeded with `BOOTSTRAP_SEED`: the same records give the same
  interval): each rate's mean redrawn around the observed one with the sd of a mean of the seeds,
  that sd estimated from the residuals of the two-way fit rate + seed (`residual_sd`: the seed
  offsets every rate shares cancel, as in the paired choice; (rates - 1) x (seeds - 1) degrees of
  freedom) and redrawn from its chi-square law on each replicate; the 2.5 and 97.5 percentiles.
  Resampling the seeds themselves (a paired bootstrap over 3 seeds: 10 distinct resamples) held
  the planted optimum in only 65-70% of simulated calibrations (nominal 95%); this one in 94-96%
  (bench/README.md, "learning-rate rule").
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

DRAWS = 1000
BOOTSTRAP_SEED = 0
LEVEL = 0.95


def mean_sd(losses: Sequence[float]) -> tuple[float, float]:
    """(mean, sd over seeds with n - 1) of one rate's losses: mean +inf when one is not finite
    (diverged or failed counts as worst), sd nan with fewer than two seeds or a non-finite loss."""
    if not losses or any(not math.isfinite(v) for v in losses):
        return math.inf, math.nan
    m = math.fsum(losses) / len(losses)
    if len(losses) < 2:
        return m, math.nan
    return m, math.sqrt(math.fsum((v - m) ** 2 for v in losses) / (len(losses) - 1))


def best_index(rates: Sequence[float], means: Sequence[float]) -> int | None:
    """The index of the lowest finite mean (equal means: the lower rate); None when none is finite."""
    best: int | None = None
    for i, m in enumerate(means):
        if math.isfinite(m) and (best is None or m < means[best] or (m == means[best] and rates[i] < rates[best])):
            best = i
    return best


def vertex(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The x of the vertex of the parabola through three points (x ascending, the middle y the
    lowest, so the vertex lies within half a step of the middle x); the middle x when the three
    lie on a line (equal means)."""
    (x0, x1, x2), (y0, y1, y2) = xs, ys
    num = (x1 - x0) ** 2 * (y1 - y2) - (x1 - x2) ** 2 * (y1 - y0)
    den = (x1 - x0) * (y1 - y2) - (x1 - x2) * (y1 - y0)
    return x1 - 0.5 * num / den if den else x1


def chosen_log2(rates: Sequence[float], means: Sequence[float], seeds: int) -> float | None:
    """log2 of the chosen rate (see the module docstring); None when no mean is finite."""
    b = best_index(rates, means)
    if b is None:
        return None
    xs = [math.log2(r) for r in rates]
    if seeds < 2 or b == 0 or b == len(rates) - 1 or not (math.isfinite(means[b - 1]) and math.isfinite(means[b + 1])):
        return xs[b]
    return vertex(xs[b - 1 : b + 2], means[b - 1 : b + 2])


def rounded_rate(log2_rate: float) -> float:
    """2 ** log2_rate to 3 significant digits (a rate a config file shows as it is)."""
    return float(format(2.0**log2_rate, ".3g"))


def residual_sd(losses: Sequence[Sequence[float]]) -> tuple[float, int]:
    """(sd, degrees of freedom) of one run's own noise: the residuals of the two-way fit rate +
    seed over the rates whose seeds all reached a finite loss, pooled ((rates - 1) x (seeds - 1)
    degrees of freedom; a seed's offset shared by every rate cancels, as it does in the choice).
    (nan, 0) with fewer than two such rates or seeds."""
    rows = [list(row) for row in losses if row and all(math.isfinite(v) for v in row)]
    if len(rows) < 2 or len(rows[0]) < 2:
        return math.nan, 0
    n = len(rows[0])
    df = (len(rows) - 1) * (n - 1)
    grand = math.fsum(map(math.fsum, rows)) / (len(rows) * n)
    rate_means = [math.fsum(row) / n for row in rows]
    seed_means = [math.fsum(row[k] for row in rows) / len(rows) for k in range(n)]
    ss = math.fsum(
        (row[k] - rate_means[i] - seed_means[k] + grand) ** 2 for i, row in enumerate(rows) for k in range(n)
    )
    return math.sqrt(ss / df), df


def bootstrap_interval(
    rates: Sequence[float],
    losses: Sequence[Sequence[float]],
    draws: int = DRAWS,
    seed: int = BOOTSTRAP_SEED,
    level: float = LEVEL,
) -> tuple[float, float] | None:
    """The 95% interval of the chosen rate (in rate, not log2): the choice recomputed on `draws`
    parametric bootstrap replicates of the rates' means, each mean redrawn around the observed one
    with the sd of a mean of the seeds (`residual_sd` / sqrt(seeds)), the sd itself redrawn from
    its chi-square law (its few degrees of freedom widen the interval); the 2.5 and 97.5
    percentiles. A rate that diverged stays the worst. None with fewer than two seeds, or no
    residual degrees of freedom. `losses[i][k]`: rate i, seed k (the same seeds at every rate)."""
    n = len(losses[0]) if losses else 0
    if n < 2:
        return None
    sd, df = residual_sd(losses)
    if df < 1:
        return None
    means = [mean_sd(row)[0] for row in losses]
    rng = random.Random(seed)
    picks: list[float] = []
    for _ in range(draws):
        scale = sd * math.sqrt(df / (2.0 * rng.gammavariate(df / 2.0, 1.0))) / math.sqrt(n)
        drawn = [m + rng.gauss(0.0, scale) if math.isfinite(m) else m for m in means]
        x = chosen_log2(rates, drawn, n)
        if x is not None:
            picks.append(x)
    if not picks:
        return None
    picks.sort()
    tail = (1.0 - level) / 2
    return 2.0 ** _quantile(picks, tail), 2.0 ** _quantile(picks, 1.0 - tail)


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile by linear interpolation between order statistics (numpy's default)."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def paired_differences(losses: Sequence[Sequence[float]], against: int) -> list[tuple[float, float]]:
    """For each rate: (mean, sd) over seeds of its loss minus the loss of rate `against` at the
    same seed (nan where a loss is not finite; sd nan with fewer than two seeds)."""
    out = []
    for row in losses:
        diffs = [a - b for a, b in zip(row, losses[against], strict=True)]
        m, sd = mean_sd(diffs)
        out.append((m if math.isfinite(m) else math.nan, sd))
    return out
