"""Group-sequential verification: look at the seeds several times, stop the candidates already
decided, and keep every claim at level alpha.

Today's fixed plan (`planning`, `pilot`) spends a variance-only pilot and then decides once on a
number of fresh seeds planned for the worst case. A group-sequential design instead trains the
seeds in K stages and looks after each: at look k every profile has n_k seeds (planned in advance,
n_k = ceil(k / K * N_max)), and each candidate's paired log gain over cosine is tested with the
same two one-sided t tests as the fixed verdict (`decision.py`):

- superiority, H0_j: gain_j <= 0 (T = mean / se);
- non-inferiority of cosine, H0_j: gain_j >= delta = log(1 + margin) (T = (delta - mean) / se).

Repeated looks would inflate the error of each test, so each gets a Lan-DeMets alpha-spending
function (O'Brien-Fleming type by default: alpha(t) = 2 - 2 Phi(z[1 - a/2] / sqrt(t)), which spends
almost nothing at the early looks and nearly the whole level at the last; or Pocock type,
a * log(1 + (e - 1) t)), t = n_k / N_max the information fraction. Its critical values are exact
for a z statistic (the joint law of the looks is that of Brownian motion, integrated here on a
grid, Armitage-McPherson-Rowe); the t statistic at look k is compared with the t quantile of the
same nominal tail probability at n_k - 1 degrees of freedom (the "significance level approach" of
Jennison and Turnbull, ch. 11). That conversion is an approximation; the simulation against known
truth (`sequential_sim.simulate`, `bench/bench_sequential.py`) measures what it gives, and a
simulated calibration (`sequential_bounds.calibrated_levels`) corrects it.

Holm across the m candidates, at each look, within each family: a candidate's hypothesis is
rejected at level alpha / r at look k when its statistic crossed the level-(alpha / r) boundary
at some look l <= k while it was still training; Holm's step-down over those levels is the closed
test of weighted-Bonferroni group-sequential tests (Maurer and Bretz 2013), so it holds the
familywise level for any correlation between candidates (they share cosine's seeds).

A candidate is decided, and stops training with its result frozen, once it is shown better or
shown within the margin. With `settle` (default) a candidate shown better ends the whole study:
the outcome is "better" whatever follows. The study also ends when no candidate is left, or at
the last look. The outcome, in the fixed verdict's words: "better" when some candidate is shown
better, else "near_optimal" when every candidate is shown within the margin, else "inconclusive".
Each candidate's interval is the repeated confidence interval mean +/- c_k se at the Bonferroni
level alpha / m of its last look, which covers the true gain at all looks at once with
probability >= 1 - 2 alpha / m (as nearly as the boundaries hold their level). A seed missing
for a candidate (a failed run) leaves that candidate undecidable from then on: it trains to the
last look and keeps the study from "near_optimal", never the reverse.

Measured (`python -m bench.bench_sequential`, 20,000 studies a cell, 8 candidates at the
reference study's paired spreads, 4 O'Brien-Fleming looks, N_max planned for the fixed plan's
80% target): false "better" 0.037-0.040, false "near_optimal" at a true one-margin gain
0.048-0.051, "better" at a true 3% gain 1.000, and 0.50x the seeds of today's fixed plan when
every candidate equals cosine (0.30x at a 3% gain); see bench/README.md, section 12.

A verification extended after its last look (more seeds asked of a finished one) is one design
with earlier `stages` (`sequential_stages`, `sequential_extend`): the earlier looks keep their
boundaries and the new ones spend only the alpha not yet spent, so alpha is spent once over the
whole history (`bench/bench_extension.py`).

Pure numpy/scipy: no records, no files. `tuning/verify.py` applies `decide` to one study's
records after each stage; `sequential_sim.simulate` applies the same function to many simulated
studies. The boundaries are `sequential_bounds.py`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tlmsearch.analysis.decision import BETTER, INCONCLUSIVE, NEAR_OPTIMAL, OUTCOMES, check_levels, holm, log_margin
from tlmsearch.analysis.sequential_bounds import (
    calibrated_levels,
    critical_table,
    null_t_paths,
    spent,
    t_boundaries,
    z_boundaries,
)
from tlmsearch.analysis.sequential_stages import Stage, check_stages, history_table
from tlmsearch.configs.verify import MAX_LOOKS
from tlmsearch.errors import ConfigError

SPENDING = ("obf", "pocock", "nominal")  # "nominal": no spending, alpha at every look (wrong; for tests)
DEFAULT_LOOKS = 4


# ----------------------------------------------------------------------------- the design


@dataclass(frozen=True)
class Design:
    """A group-sequential plan: cumulative seeds per profile at each look, and the levels."""

    looks: tuple[int, ...]  # n_1 < ... < n_K seeds per profile at each look; n_K = N_max
    margin: float = 0.01
    alpha: float = 0.05
    spending: str = "obf"
    calibrate: bool = True  # correct the t conversion by simulation (`calibrated_levels`)
    # earlier stages of a history extended after its last look (`sequential_stages`); () for one design
    stages: tuple[Stage, ...] = ()

    def __post_init__(self) -> None:
        check_levels(self.margin, self.alpha)
        if self.spending not in SPENDING:
            raise ConfigError(f"spending={self.spending!r} is not allowed; choose one of: {', '.join(SPENDING)}")
        ns = self.looks
        if not ns or any(isinstance(n, bool) or not isinstance(n, int) for n in ns):
            raise ConfigError(f"looks={ns!r} must be a non-empty tuple of seed counts")
        if ns[0] < 2 or any(b <= a for a, b in zip(ns, ns[1:], strict=False)):
            raise ConfigError(f"looks={ns!r} must increase and start at >= 2 seeds (a paired t test needs two)")
        object.__setattr__(self, "stages", tuple(self.stages))
        if self.stages:
            if self.spending == "nominal":
                raise ConfigError("a history of stages needs alpha spending (obf or pocock), not nominal")
            check_stages(ns, self.stages, self.alpha)

    @property
    def n_looks(self) -> int:
        return len(self.looks)

    @property
    def max_seeds(self) -> int:
        return self.looks[-1]

    @property
    def fractions(self) -> tuple[float, ...]:
        return tuple(n / self.max_seeds for n in self.looks)

    def critical(self, n_candidates: int) -> np.ndarray:
        """(m + 1, K) critical values of the t statistic: row r is level alpha / r (row 0: +inf);
        for a history, each stage's looks at its own cumulative level (`sequential_stages`)."""
        if self.stages:
            return history_table(self.looks, self.stages, self.alpha, self.spending, n_candidates, self.calibrate)
        return critical_table(self.looks, self.alpha, self.spending, n_candidates, self.calibrate)

    def stage_of(self, look: int) -> int:
        """The stage (0-based) that look index `look` belongs to."""
        return sum(self.looks[look] > s.end for s in self.stages)

    def alpha_through(self, look: int) -> float:
        """The level the history has spent once look index `look` is taken: its stage's alpha."""
        s = self.stage_of(look)
        return self.stages[s].alpha if s < len(self.stages) else self.alpha

    def stage_looks(self) -> list[tuple[int, ...]]:
        """Each stage's looks (seeds per profile), in order."""
        out: list[tuple[int, ...]] = [() for _ in range(len(self.stages) + 1)]
        for k, n in enumerate(self.looks):
            out[self.stage_of(k)] += (n,)
        return out

    def describe(self) -> str:
        sched = ", ".join(str(n) for n in self.looks)
        text = (
            f"group-sequential: {self.n_looks} looks at {sched} seeds per profile, {_SPENDING_NAMES[self.spending]} "
            f"alpha spending, alpha {self.alpha:g} for each claim, Holm over the candidates at each look"
        )
        return text + (f"; {self.history_text()}" if self.stages else "")

    def history_text(self) -> str:
        """'extended after its last look: stage 1 (looks at 2, 4 seeds) spent alpha 0.05, stage 2
        (8, 12) 0.05 more; the whole history spends alpha 0.1' ('' for one stage)."""
        if not self.stages:
            return ""
        levels = [s.alpha for s in self.stages] + [self.alpha]
        parts = []
        for i, (looks, a) in enumerate(zip(self.stage_looks(), levels, strict=True)):
            seeds = ", ".join(str(n) for n in looks)
            spent_text = f"alpha {a:g}" if i == 0 else f"{a - levels[i - 1]:g} more"
            parts.append(f"stage {i + 1} (looks at {seeds} seeds) {spent_text}")
        return (
            f"extended after its last look as a new stage: {', '.join(parts)}; the whole history spends alpha "
            f"{self.alpha:g} (earlier stages keep their boundaries; a new one spends only the alpha not yet spent)"
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "looks": list(self.looks),
            "margin": self.margin,
            "alpha": self.alpha,
            "spending": self.spending,
        }
        if self.stages:
            out["stages"] = [s.to_dict() for s in self.stages]
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Design:
        """The design verify.json's "sequential" entry recorded (`to_dict`)."""
        return cls(
            looks=tuple(int(n) for n in d["looks"]),
            margin=float(d["margin"]),
            alpha=float(d["alpha"]),
            spending=str(d["spending"]),
            stages=tuple(Stage.from_dict(s) for s in d.get("stages") or ()),
        )


_SPENDING_NAMES = {
    "obf": "O'Brien-Fleming-type",
    "pocock": "Pocock-type",
    "nominal": "no (nominal level at every look)",
}


def look_schedule(max_seeds: int, looks: int, first: int = 2) -> tuple[int, ...]:
    """n_k = ceil(k / K * max_seeds), k = 1..K, the first at least `first` seeds (duplicates merged)."""
    if isinstance(looks, bool) or not isinstance(looks, int) or not 1 <= looks <= MAX_LOOKS:
        raise ConfigError(f"looks={looks!r} must be an integer from 1 to {MAX_LOOKS}")
    if isinstance(max_seeds, bool) or not isinstance(max_seeds, int) or max_seeds < first:
        raise ConfigError(f"the most seeds {max_seeds!r} must be an integer >= {first} for a sequential design")
    ns = [max(first, math.ceil(k * max_seeds / looks)) for k in range(1, looks + 1)]
    return tuple(sorted(set(ns)))


def design(
    max_seeds: int, looks: int = DEFAULT_LOOKS, *, margin: float = 0.01, alpha: float = 0.05, spending: str = "obf"
) -> Design:
    """The design with `looks` equally spaced looks up to `max_seeds` seeds per profile."""
    return Design(looks=look_schedule(max_seeds, looks), margin=margin, alpha=alpha, spending=spending)


# ----------------------------------------------------------------------------- the decision


@dataclass(frozen=True)
class Sequential:
    """The sequential decision of S studies with m candidates (arrays; S may be 1).

    Look indices count from 0; seeds are the design's `looks[index]`."""

    design: Design
    outcome: np.ndarray  # (S,) codes into OUTCOMES
    last_look: np.ndarray  # (S,) index of the last look taken (cosine trained to it)
    stop_look: np.ndarray  # (S, m) index of the look at which each candidate stopped
    shown_better: np.ndarray  # (S, m) Holm-rejected superiority
    within_margin: np.ndarray  # (S, m) Holm-rejected non-inferiority
    decided_look: np.ndarray  # (S, m) look at which the candidate was decided (-1: never)
    mean: np.ndarray  # (S, m) paired log gain at the candidate's last look
    se: np.ndarray  # (S, m) its standard error
    low: np.ndarray  # (S, m) repeated-confidence bounds at alpha / m, log scale
    high: np.ndarray
    active: np.ndarray  # (S, m) still undecided after the looks taken: they train the next stage

    @property
    def cosine_seeds(self) -> np.ndarray:
        return np.asarray(self.design.looks)[self.last_look]

    @property
    def candidate_seeds(self) -> np.ndarray:
        return np.asarray(self.design.looks)[self.stop_look]

    @property
    def runs(self) -> np.ndarray:
        """(S,) training runs: cosine's seeds plus every candidate's."""
        return self.cosine_seeds + self.candidate_seeds.sum(axis=-1)

    @property
    def seeds_per_profile(self) -> np.ndarray:
        """(S,) runs / (m + 1): the mean seeds a profile trained."""
        return self.runs / (self.stop_look.shape[-1] + 1)

    def rate(self, outcome: str) -> float:
        return float(np.mean(self.outcome == OUTCOMES.index(outcome)))

    def mc_se(self, outcome: str) -> float:
        p = self.rate(outcome)
        return math.sqrt(p * (1 - p) / self.outcome.size)


def t_stats(
    sums: np.ndarray, squares: np.ndarray, n: int, delta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(mean, se, T superiority, T non-inferiority) over the first n seeds, from the sum and the
    sum of squares of those seeds' paired log gains (shaped (..., m))."""
    mean = sums / n
    var = np.maximum(squares - n * mean * mean, 0.0) / (n - 1)
    se = np.sqrt(var / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_sup = np.where(se > 0, mean / se, np.sign(mean) * np.inf)
        t_ni = np.where(se > 0, (delta - mean) / se, np.sign(delta - mean) * np.inf)
    bad = ~np.isfinite(mean) | ~np.isfinite(se)
    return (
        mean,
        se,
        np.where(bad, -np.inf, np.nan_to_num(t_sup, nan=-np.inf)),
        np.where(bad, -np.inf, np.nan_to_num(t_ni, nan=-np.inf)),
    )


def _levels_passed(t: np.ndarray, crit: np.ndarray) -> np.ndarray:
    """The largest r with t >= crit[r] (crit rising in r; crit[0] = inf never passes): 0..m."""
    finite = crit[1:]
    return np.searchsorted(
        np.where(np.isfinite(finite), finite, np.finfo(float).max), np.minimum(t, 1e300), side="right"
    )


def _holm_rejects(passed: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's step-down over the levels each hypothesis passed (r: passed at alpha / r)."""
    with np.errstate(divide="ignore"):
        q = np.where(passed > 0, alpha / np.maximum(passed, 1), 1.0)
    return holm(q) <= alpha * (1 + 1e-12)


def decide(gains: Any, design: Design, *, through: int | None = None, settle: bool = True) -> Sequential:
    """The sequential decision for paired log gains shaped (S, m, N) (or (m, N) for one study),
    seeds in training order, N >= the seeds of the looks taken. `through`: the looks available
    (default all K); values of a candidate after its stop are never read (they may be nan)."""
    d = np.asarray(gains, float)
    one = d.ndim == 2
    if one:
        d = d[None]
    S, m, N = d.shape
    K = design.n_looks if through is None else int(through)
    if not 1 <= K <= design.n_looks:
        raise ValueError(f"through={through} must lie in 1..{design.n_looks}")
    if N < design.looks[0]:
        raise ValueError(f"{N} seeds is fewer than the first look's {design.looks[0]}")
    crit = design.critical(m)
    delta = log_margin(design.margin)
    active = np.ones((S, m), bool)
    running = np.ones(S, bool)
    best_sup = np.zeros((S, m), int)
    best_ni = np.zeros((S, m), int)
    sup = np.zeros((S, m), bool)
    ni = np.zeros((S, m), bool)
    stop = np.zeros((S, m), int)
    last = np.zeros(S, int)
    decided_at = np.full((S, m), -1)
    mean = np.full((S, m), np.nan)
    se = np.full((S, m), np.nan)
    at = np.zeros((S, m), int)  # look of each candidate's latest statistics
    sums = np.zeros((S, m))
    squares = np.zeros((S, m))
    for k in range(K):
        n = design.looks[k]
        if n > N or not running.any():
            break
        prev = design.looks[k - 1] if k else 0
        sums = sums + d[..., prev:n].sum(axis=-1)
        squares = squares + (d[..., prev:n] ** 2).sum(axis=-1)
        mk, sk, ts, tn = t_stats(sums, squares, n, delta)
        mean = np.where(active, mk, mean)
        se = np.where(active, sk, se)
        at = np.where(active, k, at)
        stop = np.where(active, k, stop)
        last = np.where(running, k, last)
        best_sup = np.where(active, np.maximum(best_sup, _levels_passed(ts, crit[:, k])), best_sup)
        best_ni = np.where(active, np.maximum(best_ni, _levels_passed(tn, crit[:, k])), best_ni)
        sup = _holm_rejects(best_sup, design.alpha)
        ni = _holm_rejects(best_ni, design.alpha)
        decided = sup | ni
        decided_at = np.where((decided_at < 0) & decided, k, decided_at)
        active &= ~decided
        if settle:
            active &= ~sup.any(axis=-1, keepdims=True)
        running &= active.any(axis=-1)
    outcome = np.where(sup.any(-1), BETTER, np.where(ni.all(-1), NEAR_OPTIMAL, INCONCLUSIVE))
    c = crit[m][at]  # Bonferroni alpha / m boundary at each candidate's last look
    low, high = mean - c * se, mean + c * se
    out = Sequential(design, outcome, last, stop, sup, ni, decided_at, mean, se, low, high, active)
    if one:
        return Sequential(*(out.design,), *(getattr(out, f)[0] for f in _ARRAY_FIELDS))
    return out


_ARRAY_FIELDS = (
    "outcome",
    "last_look",
    "stop_look",
    "shown_better",
    "within_margin",
    "decided_look",
    "mean",
    "se",
    "low",
    "high",
    "active",
)


__all__ = [
    "DEFAULT_LOOKS",
    "MAX_LOOKS",
    "SPENDING",
    "Design",
    "Stage",
    "Sequential",
    "calibrated_levels",
    "decide",
    "design",
    "look_schedule",
    "null_t_paths",
    "spent",
    "t_boundaries",
    "z_boundaries",
]
