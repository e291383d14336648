"""Simulated studies through the group-sequential decision, and the planner of its most seeds
(pure, vectorised over studies). `bench/bench_sequential.py` and the tests measure the error
rates with it; `verify --looks --seeds auto` plans its most seeds with `plan_max_seeds`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tlmsearch.analysis.decision import INCONCLUSIVE, log_margin
from tlmsearch.analysis.planning import seeds_for
from tlmsearch.analysis.sequential import DEFAULT_LOOKS, Design, decide, look_schedule

# ----------------------------------------------------------------------------- simulation


def simulate_gains(
    true_gains: Sequence[float], sd_pair: float, n_studies: int, n_seeds: int, rng: np.random.Generator
) -> np.ndarray:
    """(S, m, N) paired log gains of simulated studies, as `simulation.simulate` builds them:
    each profile's per-seed log perplexity carries independent noise sd_pair / sqrt(2), so each
    paired gain has sd `sd_pair` and two candidates' gains correlate at 0.5 through cosine."""
    g = np.log1p(np.asarray(true_gains, float))
    noise = sd_pair / math.sqrt(2.0)
    cos = rng.normal(0.0, noise, (n_studies, 1, n_seeds))
    cand = rng.normal(0.0, noise, (n_studies, g.size, n_seeds))
    return g[None, :, None] + cos - cand


# a chunk of simulated studies: each study's outcome, runs in all, and seeds of cosine
Chunk = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class SimSummary:
    """Rates of each outcome and seeds spent over simulated studies."""

    n_studies: int
    better: float
    near_optimal: float
    inconclusive: float
    seeds_per_profile: float  # mean runs / (m + 1)
    cosine_seeds: float  # mean seeds of cosine (the look the study stopped at)
    max_seeds: int

    def mc_se(self, rate: float) -> float:
        return math.sqrt(max(rate * (1.0 - rate), 0.0) / self.n_studies)


def simulate(
    true_gains: Sequence[float],
    sd_pair: float,
    design: Design,
    *,
    n_studies: int = 20_000,
    seed: int = 0,
    settle: bool = True,
    chunk: int = 4000,
) -> SimSummary:
    """Run `n_studies` simulated studies through `decide`, in chunks (memory: chunk x m x N_max)."""
    rng = np.random.default_rng(seed)

    def one_chunk(s: int) -> Chunk:
        res = decide(simulate_gains(true_gains, sd_pair, s, design.max_seeds, rng), design, settle=settle)
        return res.outcome, res.runs, res.cosine_seeds

    return _summarise(one_chunk, n_studies, chunk, len(true_gains), design.max_seeds)


def _summarise(one_chunk: Callable[[int], Chunk], n_studies: int, chunk: int, m: int, max_seeds: int) -> SimSummary:
    """The rates and seeds of `n_studies` studies decided `chunk` at a time by `one_chunk(s)`
    (s studies; memory: chunk x m x N_max), over `m` candidates and `max_seeds` at the most."""
    counts = np.zeros(3)
    runs = cos = 0.0
    done = 0
    while done < n_studies:
        s = min(chunk, n_studies - done)
        outcome, studies_runs, cos_seeds = one_chunk(s)
        counts += np.bincount(outcome, minlength=3)
        runs += float(np.sum(studies_runs))
        cos += float(np.sum(cos_seeds))
        done += s
    rates = counts / n_studies
    return SimSummary(
        n_studies,
        float(rates[0]),
        float(rates[1]),
        float(rates[2]),
        runs / n_studies / (m + 1),
        cos / n_studies,
        max_seeds,
    )


# ----------------------------------------------------------------------------- planning


def power_near_optimal(
    sd_pair: float,
    n_candidates: int,
    max_seeds: int,
    looks: int,
    *,
    margin: float = 0.01,
    alpha: float = 0.05,
    spending: str = "obf",
    n_studies: int = 2000,
    seed: int = 0,
    calibrate: bool = True,
) -> float:
    """Simulated probability that the design shows every candidate within the margin when every
    candidate truly equals cosine (the target today's planner aims at)."""
    d = Design(
        looks=look_schedule(max_seeds, looks), margin=margin, alpha=alpha, spending=spending, calibrate=calibrate
    )
    return simulate([0.0] * n_candidates, sd_pair, d, n_studies=n_studies, seed=seed).near_optimal


def plan_max_seeds(
    sd_pair: float,
    n_candidates: int,
    looks: int = DEFAULT_LOOKS,
    *,
    margin: float = 0.01,
    alpha: float = 0.05,
    power: float = 0.8,
    spending: str = "obf",
    cap: int = 1000,
    n_studies: int = 2000,
    seed: int = 0,
) -> int:
    """The fewest seeds N_max (<= `cap`) whose design reaches `power` for "near_optimal" when all
    candidates equal cosine at paired sd `sd_pair`, found by simulated studies (the same seed for
    every N) and bisection from the fixed plan's count. Returns `cap` when the cap falls short.
    Unlike today's planner (Bonferroni with independent candidates, which at 8 candidates
    overshoots its 80% target to about 97%), this aims at the target itself. The boundaries here
    skip the t calibration (`calibrated_levels`): it moves the level by a few percent of alpha
    and the power by far less."""

    def ok(n: int) -> bool:
        kw = {"margin": margin, "alpha": alpha, "spending": spending, "n_studies": n_studies, "seed": seed}
        return power_near_optimal(sd_pair, n_candidates, n, looks, calibrate=False, **kw) >= power  # type: ignore[arg-type]

    m = n_candidates
    guess = int(seeds_for(sd_pair, log_margin(margin), alpha_one_sided=alpha / m, power=power ** (1.0 / m)))
    lo, hi = 2, min(cap, guess if guess > 0 else cap)
    while not ok(hi):
        if hi >= cap:
            return cap
        lo, hi = hi + 1, min(cap, 2 * hi)
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


# ----------------------------------------------------------------------------- extension after the last look


EXTENSIONS = ("refuse", "replan", "stage")


def simulate_extension(
    true_gains: Sequence[float],
    sd_pair: float,
    first: Design,
    then: Design,
    *,
    how: str,
    n_studies: int = 20_000,
    seed: int = 0,
    chunk: int = 4000,
) -> SimSummary:
    """A verification `first` that, when it ends inconclusive at its last look, is extended to
    `then`'s looks on the same seeds continued, `how`:

    - "refuse": no extension (the history is `first` alone);
    - "replan": today's re-planning: `then` decided afresh on the seeds 1..N of its looks, at its
      own full alpha, as if `first` had not looked (the outcome is `then`'s);
    - "stage": `then` must be `first` extended as a new stage (`then.stages` ending at `first`'s
      last look): one decision over the whole history.

    The outcome of a history is `first`'s when it decided, else the extension's. Its rates are
    the history's error rates against the truth `true_gains` (fractions, as `simulate_gains`)."""
    if how not in EXTENSIONS:
        raise ValueError(f"how={how!r}; choose one of {EXTENSIONS}")
    if how == "stage" and (not then.stages or then.stages[-1].end != first.max_seeds):
        raise ValueError("a stage extension's design must end its earlier stages at the first design's last look")
    rng = np.random.default_rng(seed)
    n_max = max(first.max_seeds, then.max_seeds)

    def one_chunk(s: int) -> Chunk:
        gains = simulate_gains(true_gains, sd_pair, s, n_max, rng)
        if how == "stage":
            res = decide(gains, then)
            return res.outcome, res.runs, res.cosine_seeds
        one = decide(gains[..., : first.max_seeds], first)
        if how != "replan":
            return one.outcome, one.runs.astype(float), one.cosine_seeds.astype(float)
        again = one.outcome == INCONCLUSIVE
        two = decide(gains[..., : then.max_seeds], then)
        return (
            np.where(again, two.outcome, one.outcome),
            np.where(again, np.maximum(two.runs, one.runs), one.runs),
            np.where(again, np.maximum(two.cosine_seeds, one.cosine_seeds), one.cosine_seeds),
        )

    max_seeds = then.max_seeds if how != "refuse" else first.max_seeds
    return _summarise(one_chunk, n_studies, chunk, len(true_gains), max_seeds)


__all__ = [
    "EXTENSIONS",
    "SimSummary",
    "plan_max_seeds",
    "power_near_optimal",
    "simulate",
    "simulate_extension",
    "simulate_gains",
]
