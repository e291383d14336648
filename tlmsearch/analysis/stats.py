"""Paired statistics with confidence intervals, on scipy.stats.

Profiles are compared by seed: seed s of profile A and seed s of profile B see the same data
order, so the per-seed difference removes much of the noise the two runs share. We summarise
the per-seed values with a Student t interval (the default: exact under normality, honest for
n = 2..5) or a BCa bootstrap interval, which is refused below `MIN_BOOTSTRAP_SEEDS` values.

Why 20: a coverage simulation (`python -m bench.bench_verdict --part coverage`: 2000 simulated
studies a cell, scipy's BCa with 999 resamples) gives the nominal 95% BCa interval of a mean a
true coverage of 0.74 at n=3, 0.83 at n=5, 0.89 at n=10, 0.92 at n=15 and 20, 0.93 at n=30 for
normal values (0.70 / 0.83 / 0.89 / 0.90 / 0.91 / 0.92 for log-normal ones); the 97.5% interval
(the one a verdict with two candidates uses) reaches 0.95 / 0.94 at n=20. Below 20 the shortfall
is 3 points or more, where the t interval is right at any n for normal data.

scipy is imported inside the functions: `import tlmsearch` and `tlmsearch --help` stay fast.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tlmsearch.core.validate import METHODS as METHODS  # checked with the configs, re-exported
from tlmsearch.core.validate import MIN_BOOTSTRAP_SEEDS  # from the coverage simulation above
from tlmsearch.core.validate import check_method as check_method  # re-exported: the statistics' callers name it here
from tlmsearch.errors import ConfigError

# Fewest (x, y) pairs for a bootstrap interval of a rank correlation. Simulated (bivariate normal,
# 400 studies a cell, BCa with 999 resamples, nominal 95%): at n=10 the interval covers the true
# Spearman rho 0.96 / 0.96 / 0.98 of the time for rho = 0 / 0.6 / 0.9 (n=8: 0.95 / 0.95 / 0.995;
# n=5: BCa is often undefined and covers 0.94-1.0); 10 keeps a margin.
MIN_RANK_POINTS = 10


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided confidence interval computed from `n` values."""

    estimate: float
    low: float
    high: float
    n: int
    confidence: float = 0.95

    def covers(self, value: float) -> bool:
        return self.low <= value <= self.high

    def to_dict(self) -> dict[str, float | int]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "confidence": self.confidence,
        }

    def __str__(self) -> str:
        return f"{self.estimate:+.4g} [{self.low:+.4g}, {self.high:+.4g}]"


def t_quantile(p: float, df: float) -> float:
    """The t value with P(T <= t) = p (scipy.stats.t)."""
    from scipy import stats

    if not 0.0 < p < 1.0:
        raise ValueError(f"p={p} must lie in (0, 1)")
    return float(stats.t.ppf(p, df))


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Mean with a Student t interval. One value gives an unbounded interval (-inf, inf)."""
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError("mean_ci needs at least one value")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence} must lie in (0, 1)")
    mean = statistics.fmean(xs)
    n = len(xs)
    if n == 1:
        return Interval(mean, -math.inf, math.inf, 1, confidence)
    sem = statistics.stdev(xs) / math.sqrt(n)
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * sem
    return Interval(mean, mean - half, mean + half, n, confidence)


def bootstrap_ci(
    values: Sequence[float],
    statistic: Callable[..., Any] | None = None,
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
    min_n: int = MIN_BOOTSTRAP_SEEDS,
) -> Interval:
    """BCa bootstrap interval of `statistic` (default: the mean), deterministic for a given `seed`.

    `statistic` must accept an `axis` keyword (numpy style). Refused below `min_n` values.
    """
    import numpy as np
    from scipy import stats

    xs = np.asarray([float(v) for v in values])
    if xs.size < min_n:
        raise ConfigError(
            f"a bootstrap interval needs at least {min_n} values (got {xs.size}): below that it covers far "
            "less often than it claims; use the t interval"
        )
    stat = statistic or np.mean
    estimate = float(stat(xs, axis=-1))
    if np.ptp(xs) == 0.0:  # no spread: every resample gives the same value
        return Interval(estimate, estimate, estimate, int(xs.size), confidence)
    res = stats.bootstrap(
        (xs,),
        stat,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="BCa",
        rng=np.random.default_rng(seed),
    )
    ci = res.confidence_interval
    return Interval(estimate, float(ci.low), float(ci.high), int(xs.size), confidence)


def paired(a: Mapping[int, float], b: Mapping[int, float]) -> tuple[list[int], list[float], list[float]]:
    """The seeds both `a` and `b` have (sorted) and their values in that order."""
    seeds = sorted(set(a) & set(b))
    return seeds, [a[s] for s in seeds], [b[s] for s in seeds]


def interval(values: Sequence[float], confidence: float = 0.95, method: str = "t") -> Interval:
    """Mean with a Student t interval (`method="t"`) or a BCa bootstrap interval."""
    check_method(method)
    if method == "t":
        return mean_ci(values, confidence)
    return bootstrap_ci(values, confidence=confidence)


def paired_difference(
    a: Mapping[int, float], b: Mapping[int, float], confidence: float = 0.95, method: str = "t"
) -> Interval:
    """Mean over common seeds of a[s] - b[s], with a t (or bootstrap) interval."""
    seeds, xa, xb = paired(a, b)
    if not seeds:
        raise ValueError("no common seeds to pair")
    return interval([x - y for x, y in zip(xa, xb, strict=True)], confidence, method)


def paired_ratio(
    a: Mapping[int, float], b: Mapping[int, float], confidence: float = 0.95, method: str = "t"
) -> Interval:
    """Mean over common seeds of a[s] / b[s] - 1 (relative difference), with a t (or bootstrap) interval."""
    seeds, xa, xb = paired(a, b)
    if not seeds:
        raise ValueError("no common seeds to pair")
    return interval([x / y - 1.0 for x, y in zip(xa, xb, strict=True)], confidence, method)


# ----------------------------------------------------------------------------- rank correlation


@dataclass(frozen=True)
class RankCorrelation:
    """Spearman's rank correlation of paired scores, with a BCa bootstrap interval over the pairs
    (None below `MIN_RANK_POINTS` pairs: a bootstrap of 3-9 points is not an interval)."""

    rho: float
    n: int
    interval: Interval | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rho": None if math.isnan(self.rho) else self.rho,
            "n": self.n,
            "interval": self.interval.to_dict() if self.interval else None,
        }


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation (scipy.stats.spearmanr); nan when undefined (a constant side or
    fewer than two points)."""
    import warnings

    from scipy import stats

    if len(a) != len(b):
        raise ValueError(f"spearman needs equal lengths, got {len(a)} and {len(b)}")
    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.spearmanr(a, b).statistic)


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank (scipy.stats.rankdata)."""
    from scipy import stats

    return [float(r) for r in stats.rankdata(values)]


def rank_correlation(
    x: Sequence[float],
    y: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
    min_n: int = MIN_RANK_POINTS,
) -> RankCorrelation:
    """Spearman's rho of x and y with a BCa bootstrap interval resampling the (x, y) pairs."""
    import warnings

    import numpy as np
    from scipy import stats

    rho = spearman(list(x), list(y))
    n = len(x)
    if n < min_n or math.isnan(rho):
        return RankCorrelation(rho, n, None)

    with warnings.catch_warnings():  # a degenerate resample set gives nan bounds, handled below
        warnings.simplefilter("ignore")
        res = stats.bootstrap(
            (np.asarray(x, float), np.asarray(y, float)),
            _spearman_rows,
            paired=True,
            vectorized=True,
            confidence_level=confidence,
            n_resamples=n_resamples,
            method="BCa",
            rng=np.random.default_rng(seed),
        )
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if math.isnan(low) or math.isnan(high):  # degenerate resamples (ties everywhere): no interval
        return RankCorrelation(rho, n, None)
    return RankCorrelation(rho, n, Interval(rho, low, high, n, confidence))


def _spearman_rows(x: Any, y: Any, axis: int = -1) -> Any:
    """Spearman's rho along `axis` for stacks of resamples (vectorised; a constant row gives 0,
    the value of no association, instead of nan so that BCa's jackknife stays defined)."""
    import numpy as np
    from scipy import stats

    rx = stats.rankdata(x, axis=axis)
    ry = stats.rankdata(y, axis=axis)
    rx = rx - rx.mean(axis=axis, keepdims=True)
    ry = ry - ry.mean(axis=axis, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=axis) * (ry * ry).sum(axis=axis))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (rx * ry).sum(axis=axis) / np.where(den > 0, den, 1.0), 0.0)
