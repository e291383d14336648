"""Simulated studies with a known truth, run through the tool's own procedure (pilot, seed plan,
cap, one decision), vectorised over studies. The error rates of the verdict are measured with
it, in the tests and in `bench/bench_verdict.py`.

Model of one study: m candidates and cosine, seed s shared by all profiles. The per-seed log
perplexity of each profile carries independent noise of sd `sd_pair / sqrt(2)`, so each paired
gain (cosine minus candidate) has sd `sd_pair` and two candidates' gains correlate at 0.5 through
cosine's shared noise, as in a real study.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tlmsearch.analysis.decision import OUTCOMES, decide, log_margin
from tlmsearch.analysis.planning import final_seeds, sd_limits


@dataclass(frozen=True)
class Simulated:
    outcome: np.ndarray  # (S,) codes into OUTCOMES
    n_seeds: np.ndarray  # (S,) seeds each study trained (pilot included)
    gains: np.ndarray  # (S, m, N) the simulated paired log gains, seeds in training order
    start: np.ndarray  # (S,) first seed index the decision used
    used: np.ndarray  # (S,) seeds the decision used

    def rate(self, outcome: str) -> float:
        return float(np.mean(self.outcome == OUTCOMES.index(outcome)))

    def mc_se(self, outcome: str) -> float:
        """Monte-Carlo standard error of `rate(outcome)`."""
        p = self.rate(outcome)
        return math.sqrt(p * (1 - p) / self.outcome.size)


def simulate(
    true_gains: Sequence[float],
    sd_pair: float,
    *,
    n_studies: int = 10_000,
    margin: float = 0.01,
    alpha: float = 0.05,
    power: float = 0.8,
    pilot_seeds: int = 3,
    max_seeds: int = 20,
    fixed_seeds: int | None = None,
    reuse_pilot: bool = False,
    seed: int = 0,
) -> Simulated:
    """Run `n_studies` studies whose candidates truly gain `true_gains` (relative perplexity,
    0.03 = 3% better than cosine). With `fixed_seeds` the plan is skipped (a fixed design).
    `n_seeds` counts every seed trained (pilot included). `reuse_pilot` lets the pilot's seeds
    enter the decision too (the classic internal pilot the planner does NOT use: measured here)."""
    rng = np.random.default_rng(seed)
    g = np.log1p(np.asarray(true_gains, float))  # (m,)
    m = g.size
    n_max = fixed_seeds or max_seeds
    noise = sd_pair / math.sqrt(2.0)
    cos = rng.normal(0.0, noise, (n_studies, 1, n_max))
    cand = rng.normal(0.0, noise, (n_studies, m, n_max))
    d = g[None, :, None] + cos - cand  # (S, m, N) paired log gains, seeds in training order
    start = np.zeros(n_studies, dtype=int)
    if fixed_seeds is not None:
        n = np.full(n_studies, fixed_seeds)
        total = n
    else:  # the planner's rule (planning.plan_seeds), vectorised over studies
        sd_hat = d[..., :pilot_seeds].std(axis=-1, ddof=1).max(axis=-1)  # (S,)
        if reuse_pilot:  # classic internal pilot: n in all, the pilot's seeds among them
            limits = sd_limits(log_margin(margin), alpha / m, power ** (1.0 / m), max_seeds)
            n = total = np.clip(np.searchsorted(limits, sd_hat, side="left"), pilot_seeds, max_seeds)
        else:
            room = max_seeds - pilot_seeds
            n = final_seeds(sd_hat, margin=margin, alpha=alpha, n_candidates=m, power=power, room=room)
            total, start = pilot_seeds + n, np.full(n_studies, pilot_seeds)
    idx = np.arange(n_max)[None, None, :]
    mask = (idx >= start[:, None, None]) & (idx < (start + n)[:, None, None])
    nn = n[:, None].astype(float)
    mean = (d * mask).sum(-1) / nn
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (((d - mean[..., None]) ** 2) * mask).sum(-1) / (nn - 1)
        se = np.sqrt(var / nn)
    out = decide(mean, se, nn - 1, margin=margin, alpha=alpha)
    return Simulated(out["outcome"], total, d, start, n)
