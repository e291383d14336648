"""The decision rule of the verdict, vectorised: from per-candidate paired summaries to one of
three outcomes. `verdict.py` applies it to one study; the simulation tests apply the very same
function to tens of thousands of simulated studies at once.

Inputs are per-candidate summaries of the paired per-seed gains over cosine on the log scale,
d_s = log(ppl_cosine_s) - log(ppl_candidate_s) (positive: the candidate is better), shaped
(..., m) for m candidates: the mean, the standard error and the degrees of freedom (n - 1). The
margin is the relative perplexity gain declared before the data (0.01 = 1%); on the log scale
it is delta = log(1 + margin). With m candidates and level alpha:

- superiority, one test per candidate, H0_j: gain_j <= 0. "better" when Holm's step-down rejects
  at least one, which happens exactly when the smallest p-value is <= alpha / m, i.e. when some
  candidate's one-sided lower bound at level 1 - alpha / m lies above 0. The candidates Holm
  rejects are the ones shown better.
- non-inferiority of cosine (one-sided tests, the two halves of a TOST collapsed to the one side
  that matters, since a candidate far worse than cosine is no threat to it), H0_j: gain_j >= delta.
  "near_optimal" when Holm's step-down rejects every one of them. (Requiring every test to reject
  is an intersection-union test, which would already hold level alpha with no correction; Holm
  is the stricter choice the project asked for, and it also makes each "candidate j is within
  the margin" statement hold jointly at level alpha.)
- "better" wins when both hold (a candidate shown better by less than the margin); otherwise
  "near_optimal"; otherwise "inconclusive".

Per-candidate intervals are two-sided at level 1 - 2 alpha / m, so their ends are the one-sided
Bonferroni bounds: the lower end decides "better" exactly; Holm can decide near-optimality where
a Bonferroni upper end still touches the margin (its later steps test at up to alpha).

A candidate with one seed (no spread estimate) gets p = 1 on both sides: it can never make the
verdict "near_optimal", only keep it "inconclusive".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tlmsearch.errors import ConfigError

OUTCOMES = ("better", "near_optimal", "inconclusive")
BETTER, NEAR_OPTIMAL, INCONCLUSIVE = range(3)


def check_levels(margin: float, alpha: float) -> None:
    """Refuse a margin <= 0 (or absurdly large) and an alpha outside (0, 0.5), in one line."""
    if not (isinstance(margin, int | float) and 0.0 < margin < 1.0):
        raise ConfigError(
            f"margin={margin} must lie in (0, 1): a relative perplexity gain declared in advance (0.01 = 1%)"
        )
    if not (isinstance(alpha, int | float) and 0.0 < alpha < 0.5):
        raise ConfigError(f"alpha={alpha} must lie in (0, 0.5) (0.05: each claim is wrong at most 5% of the time)")


def log_margin(margin: float) -> float:
    """The margin as a difference of log perplexities (nats/token)."""
    return math.log1p(margin)


def p_values(mean: Any, se: Any, df: Any, null: float, alternative: str) -> np.ndarray:
    """One-sided t-test p-values, vectorised. `alternative`: "greater" (H1: mean > null) or
    "less". Undefined tests (df < 1, nan se) get p = 1; se = 0 gives 0 or 1 by the sign."""
    from scipy import stats

    mean, se, df = np.broadcast_arrays(np.asarray(mean, float), np.asarray(se, float), np.asarray(df, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (mean - null) / se
        t = np.where(se == 0.0, np.sign(mean - null) * np.inf, t)
        safe_df = np.where(df >= 1, df, 1.0)
        p = stats.t.sf(t, safe_df) if alternative == "greater" else stats.t.cdf(t, safe_df)
    undefined = (df < 1) | ~np.isfinite(se) | ((se == 0.0) & (mean == null))
    return np.where(undefined, 1.0, p)


def holm(p: Any) -> np.ndarray:
    """Holm's step-down adjusted p-values along the last axis (vectorised, monotone, <= 1)."""
    p = np.asarray(p, float)
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ps = np.take_along_axis(p, order, axis=-1)
    adj = np.minimum(1.0, np.maximum.accumulate(ps * (m - np.arange(m)), axis=-1))
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return out


def bounds(mean: Any, se: Any, df: Any, level: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided t bounds at `level` on each side (the two ends of a 2*level-1 interval)."""
    from scipy import stats

    mean, se, df = np.broadcast_arrays(np.asarray(mean, float), np.asarray(se, float), np.asarray(df, float))
    with np.errstate(invalid="ignore"):
        q = np.where(df >= 1, stats.t.ppf(level, np.where(df >= 1, df, 1.0)), np.inf)
        half = np.where(se == 0.0, 0.0, q * se)
    half = np.where((df < 1) | ~np.isfinite(se), np.inf, half)
    return mean - half, mean + half


def decide(mean: Any, se: Any, df: Any, *, margin: float, alpha: float) -> dict[str, np.ndarray]:
    """The t-based decision for studies shaped (..., m). Returns arrays: `outcome` (codes into
    OUTCOMES, shape (...)), and per candidate `p_better`, `p_within` (Holm-adjusted),
    `shown_better`, `within_margin`, `low`, `high` (log-scale Bonferroni bounds at 1 - alpha/m)."""
    mean = np.asarray(mean, float)
    m = mean.shape[-1]
    delta = log_margin(margin)
    p_better = holm(p_values(mean, se, df, 0.0, "greater"))
    p_within = holm(p_values(mean, se, df, delta, "less"))
    shown_better = p_better <= alpha
    within = p_within <= alpha
    low, high = bounds(mean, se, df, 1.0 - alpha / m)
    return _finish(shown_better, within, p_better, p_within, low, high)


def decide_from_bounds(low: Any, high: Any, *, margin: float) -> dict[str, np.ndarray]:
    """The decision from given one-sided bounds at level 1 - alpha/m (the bootstrap path):
    Bonferroni on both sides, which is never less strict than Holm."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    shown_better = low > 0.0
    within = high < log_margin(margin)
    nan = np.full(low.shape, np.nan)
    return _finish(shown_better, within, nan, nan, low, high)


def _finish(
    shown_better: np.ndarray,
    within: np.ndarray,
    p_better: np.ndarray,
    p_within: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
) -> dict[str, np.ndarray]:
    any_better = np.asarray(shown_better.any(axis=-1))
    all_within = np.asarray(within.all(axis=-1))
    outcome = np.where(any_better, BETTER, np.where(all_within, NEAR_OPTIMAL, INCONCLUSIVE))
    return {
        "outcome": outcome,
        "all_within": all_within,
        "p_better": p_better,
        "p_within": p_within,
        "shown_better": shown_better,
        "within_margin": within,
        "low": low,
        "high": high,
    }


def summarise(diffs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, standard error and degrees of freedom of per-seed values along the last axis."""
    d = np.asarray(diffs, float)
    n = d.shape[-1]
    mean = d.mean(axis=-1)
    if n < 2:
        return mean, np.full(mean.shape, np.nan), np.zeros(mean.shape)
    se = d.std(axis=-1, ddof=1) / math.sqrt(n)
    return mean, se, np.full(mean.shape, n - 1.0)
