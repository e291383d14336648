"""Paired statistics with confidence intervals, self-contained (no scipy at run time).

Profiles are compared by seed: seed s of profile A and seed s of profile B see the same data
order and the same initialisation stream, so the per-seed difference removes most of the noise
the two runs share. We summarise the per-seed values with a Student t interval (the default,
exact under normality, honest for n = 2..5) or a percentile bootstrap.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tlmsearch.profiles.shape import ranks, spearman  # noqa: F401  (one rank correlation for the tool)


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


# ----------------------------------------------------------------------------- t distribution


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    if df <= 0:
        raise ValueError(f"df={df} must be > 0")
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t value with P(T <= t) = p (bisection on `t_cdf`, accurate to ~1e-10)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p={p} must lie in (0, 1)")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


# ----------------------------------------------------------------------------- intervals


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
    statistic: Callable[[Sequence[float]], float] = statistics.fmean,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of `statistic` (deterministic for a given `seed`)."""
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError("bootstrap_ci needs at least one value")
    rng = random.Random(seed)
    n = len(xs)
    stats = sorted(statistic([xs[rng.randrange(n)] for _ in range(n)]) for _ in range(n_resamples))
    alpha = (1.0 - confidence) / 2.0
    low = stats[int(math.floor(alpha * (n_resamples - 1)))]
    high = stats[int(math.ceil((1.0 - alpha) * (n_resamples - 1)))]
    return Interval(statistic(xs), low, high, n, confidence)


def paired(a: Mapping[int, float], b: Mapping[int, float]) -> tuple[list[int], list[float], list[float]]:
    """The seeds both `a` and `b` have (sorted) and their values in that order."""
    seeds = sorted(set(a) & set(b))
    return seeds, [a[s] for s in seeds], [b[s] for s in seeds]


METHODS = ("t", "bootstrap")


def interval(values: Sequence[float], confidence: float = 0.95, method: str = "t") -> Interval:
    """Mean with a Student t interval (`method="t"`) or a percentile bootstrap interval."""
    if method == "t":
        return mean_ci(values, confidence)
    if method == "bootstrap":
        return bootstrap_ci(values, confidence=confidence)
    raise ValueError(f"method={method!r} is not allowed; choose one of: {', '.join(METHODS)}")


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
