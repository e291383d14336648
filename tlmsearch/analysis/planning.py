"""How many seeds a verdict needs: a pure seed planner from a pilot's paired spread.

The design is a pilot for the variance only: run a few pilot seeds of every profile, use them
ONLY to estimate the spread of the paired gains, compute the number of further seeds, run them
with fresh seed numbers, and decide ONCE, with the ordinary tests of `decision.py`, on the seeds
after the pilot. The pilot's values never enter the decision, and the number of final seeds
depends on the pilot alone, so the final tests hold their level exactly: the data are looked at
once, and there is no alpha to spend.

Why not also reuse the pilot seeds in the decision (the classic internal pilot, Wittes and
Brittain 1990)? Because the simulation of that design (`python -m bench.bench_verdict`,
design "reuse-pilot") finds it liberal at these small sizes: with one candidate, pilot 3,
margin 1%, alpha 0.05 and paired sd 0.01, the false "better" rate is 0.080 (40000 studies,
Monte-Carlo SE 0.0014) and the false "near_optimal" rate 0.058, because a small pilot sd both
shortens the study and shrinks the final variance estimate. Keeping the pilot out holds both at
or below 0.05 in every simulated cell (design "planned") and costs the pilot's seeds.

The target: if every candidate were exactly as good as cosine (true gain 0), the study should
show cosine within the margin with probability `power`. For one candidate with paired sd s on
the log scale, n final seeds give that when

    (t[1 - alpha/m, n-1] + t[power_1, n-1]) * s / sqrt(n) <= log(1 + margin),

i.e. the one-sided bound's half-width leaves room for the noise of the mean. alpha/m is the
Bonferroni level (Holm's first and strictest step); power_1 = power ** (1/m) asks each of the m
candidates to succeed so that all do together with about `power` (independent tests). The
spread is the largest pilot sd over the candidates. The total (pilot + final) is capped by
`max_seeds`: the plan then says how wide the bound will be, in units of the margin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tlmsearch.analysis.decision import check_levels, log_margin
from tlmsearch.core.words import plural
from tlmsearch.errors import ConfigError

SEARCH_LIMIT = 10_000  # seeds beyond which "how many would decide it" answers None


@dataclass(frozen=True)
class SeedPlan:
    """The seeds to run in all (pilot included) and what they buy."""

    n_seeds: int  # pilot + final
    pilot_seeds: int
    sd: float  # paired sd of the log-perplexity gain (nats) the plan assumes
    needed: int | None  # final seeds the target needs without the cap (None: more than SEARCH_LIMIT)
    capped: bool
    half_width: float  # one-sided bound half-width at the final seeds (nats), at level 1 - alpha/m
    margin: float
    alpha: float
    n_candidates: int
    power: float
    # what pairing by seed bought in the pilot (`pairing.Pairing`): the seed correlation of the reference
    # (cosine unless chosen) and the candidates (median) and the unpaired sd of the spread-setting
    # candidate's difference, sqrt(sd_reference^2 + sd_candidate^2); None when not measured (a plan from a given sd)
    correlation: float | None = field(default=None, compare=False)
    unpaired_sd: float | None = field(default=None, compare=False)

    @property
    def unpaired_needed(self) -> int | None:
        """Fresh seeds the target would need were the runs unpaired (independent), None unknown."""
        if self.unpaired_sd is None:
            return None
        m = self.n_candidates
        n = int(seeds_for(self.unpaired_sd, log_margin(self.margin), alpha_one_sided=self.alpha / m,
                          power=self.power ** (1.0 / m)))  # fmt: skip
        return n if n > 0 else None

    @property
    def final_seeds(self) -> int:
        """The seeds after the pilot: the only ones the decision uses."""
        return self.n_seeds - self.pilot_seeds

    @property
    def half_width_margins(self) -> float:
        """The bound's half-width in units of the margin (below 1: the margin can be shown)."""
        return self.half_width / log_margin(self.margin)

    def describe(self) -> str:
        text = (
            f"plan: {self.n_seeds} seeds per profile: a pilot of {self.pilot_seeds} (for the spread only), then "
            f"{self.final_seeds} fresh seeds that decide: paired sd "
            f"{self.sd:.4f} nats over {plural(self.n_candidates, 'candidate')}; the one-sided bounds will be "
            f"+/-{self.half_width_margins:.2f}x the {self.margin:.1%} margin (alpha {self.alpha:g}, power target "
            f"{self.power:.0%})"
        )
        if self.capped:
            need = f"{self.needed}" if self.needed is not None else f"more than {SEARCH_LIMIT}"
            text += f"; capped by max_seeds (the target needs {need}): expect an inconclusive answer more often"
        if self.correlation is not None and self.unpaired_sd:
            unpaired = self.unpaired_needed
            text += (
                f"; planned from the pairing the pilot measured: seed correlation {self.correlation:+.2f} "
                f"(median over candidates), paired sd {self.sd / self.unpaired_sd:.2f}x the unpaired "
                f"{self.unpaired_sd:.4f} (unpaired runs would need "
                f"{unpaired if unpaired is not None else f'more than {SEARCH_LIMIT}'} fresh seeds)"
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_seeds": self.n_seeds,
            "pilot_seeds": self.pilot_seeds,
            "final_seeds": self.final_seeds,
            "sd": self.sd,
            "needed": self.needed,
            "capped": self.capped,
            "half_width": self.half_width,
            "half_width_margins": self.half_width_margins,
            "margin": self.margin,
            "alpha": self.alpha,
            "n_candidates": self.n_candidates,
            "power": self.power,
            "correlation": self.correlation,
            "unpaired_sd": self.unpaired_sd,
            "unpaired_needed": self.unpaired_needed,
        }


def sd_limits(effect: float, alpha_one_sided: float, power: float, n_max: int) -> np.ndarray:
    """For n = 0..n_max, the largest sd for which n seeds reach `power` at `effect` (0 for n < 2).
    Increasing in n, so `searchsorted` turns an sd into a number of seeds (vectorised planning)."""
    from scipy import stats

    n = np.arange(n_max + 1, dtype=float)
    out = np.zeros(n_max + 1)
    if n_max >= 2 and effect > 0:
        df = n[2:] - 1.0
        q = stats.t.ppf(1.0 - alpha_one_sided, df) + stats.t.ppf(power, df)
        out[2:] = effect * np.sqrt(n[2:]) / q
    return np.maximum.accumulate(out)


def seeds_for(sd: Any, effect: float, *, alpha_one_sided: float, power: float, n_min: int = 2) -> Any:
    """Smallest n >= n_min with (t[1-a, n-1] + t[power, n-1]) sd / sqrt(n) <= effect, vectorised
    over `sd`; -1 where more than SEARCH_LIMIT seeds (or a non-positive effect) would be needed."""
    limits = sd_limits(effect, alpha_one_sided, power, SEARCH_LIMIT)
    sd = np.asarray(sd, float)
    n = np.searchsorted(limits, np.where(np.isfinite(sd), sd, np.inf), side="left")
    n = np.maximum(n, n_min)
    return np.where((n > SEARCH_LIMIT) | (effect <= 0), -1, n)


def final_seeds(sd: Any, *, margin: float, alpha: float, n_candidates: int, power: float, room: int) -> Any:
    """The planner's rule, vectorised over pilot sds: final seeds in [2, room] (room = max_seeds -
    pilot seeds). `plan_seeds` and the simulations (`simulation.simulate`) both use it."""
    m = n_candidates
    needed = seeds_for(sd, log_margin(margin), alpha_one_sided=alpha / m, power=power ** (1.0 / m))
    return np.where(needed < 0, room, np.clip(needed, 2, room))


def _check(margin: float, alpha: float, power: float) -> None:
    check_levels(margin, alpha)
    if not 0.5 <= power < 1.0:
        raise ConfigError(f"power={power} must lie in [0.5, 1)")


def plan_seeds(
    pilot: Sequence[Sequence[float]] | Sequence[float] | None = None,
    *,
    sd: float | None = None,
    pilot_seeds: int | None = None,
    margin: float = 0.01,
    alpha: float = 0.05,
    n_candidates: int | None = None,
    power: float = 0.8,
    max_seeds: int = 20,
) -> SeedPlan:
    """The number of seeds per profile for a verdict, from the pilot's paired log gains
    (`pilot`: one row of per-seed values per candidate) or from a given `sd` and `pilot_seeds`.
    `max_seeds` caps pilot + final and must leave at least 2 final seeds."""
    _check(margin, alpha, power)
    if pilot is not None:
        rows = np.atleast_2d(np.asarray(pilot, float))
        if rows.ndim != 2:
            raise ConfigError(
                f"the pilot has {rows.ndim} dimensions; give one row of per-seed paired values per candidate"
            )
        if rows.shape[-1] < 2:
            raise ConfigError(f"the pilot needs at least 2 seeds to estimate the spread (got {rows.shape[-1]})")
        pilot_seeds = rows.shape[-1]
        n_candidates = n_candidates or rows.shape[0]
        sd = float(rows.std(axis=-1, ddof=1).max())
    if sd is None or pilot_seeds is None:
        raise ValueError("plan_seeds needs the pilot's paired values, or sd and pilot_seeds")
    m = int(n_candidates or 1)
    if m < 1:
        raise ConfigError(f"n_candidates={m} must be >= 1")
    if max_seeds < pilot_seeds + 2:
        raise ConfigError(
            f"max_seeds={max_seeds} leaves fewer than 2 seeds after the {pilot_seeds} pilot seeds; "
            f"allowed: >= {pilot_seeds + 2}"
        )
    a1 = alpha / m
    needed = int(seeds_for(sd, log_margin(margin), alpha_one_sided=a1, power=power ** (1.0 / m)))
    n = int(final_seeds(sd, margin=margin, alpha=alpha, n_candidates=m, power=power, room=max_seeds - pilot_seeds))
    return SeedPlan(
        n_seeds=pilot_seeds + n,
        pilot_seeds=pilot_seeds,
        sd=sd,
        needed=None if needed < 0 else needed,
        capped=needed < 0 or needed > max_seeds - pilot_seeds,
        half_width=_half_width(sd, n, a1),
        margin=margin,
        alpha=alpha,
        n_candidates=m,
        power=power,
    )


def at_least(plan: SeedPlan, final: int) -> SeedPlan:
    """`plan` with at least `final` fresh seeds (e.g. the bootstrap's minimum), bound recomputed."""
    from dataclasses import replace

    if plan.final_seeds >= final:
        return plan
    a1 = plan.alpha / plan.n_candidates
    return replace(plan, n_seeds=plan.pilot_seeds + final, half_width=_half_width(plan.sd, final, a1))


def _half_width(sd: float, n: int, a1: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(1.0 - a1, n - 1) * sd / math.sqrt(n)) if n >= 2 else math.inf


def seeds_to_decide(
    mean: Sequence[float], sd: Sequence[float], *, margin: float, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Seeds per profile that would decide a study, if its observed per-candidate means and paired
    sds (log scale) were the truth: the fewer of (a) showing the most promising candidate better
    than cosine and (b) showing every candidate within the margin. None: more than SEARCH_LIMIT,
    or neither can be shown (a candidate's mean sits at or beyond the margin with none above 0)."""
    mu, s = np.asarray(mean, float), np.asarray(sd, float)
    m = mu.size
    a1 = alpha / m
    delta = log_margin(margin)
    best = [int(seeds_for(sj, float(mj), alpha_one_sided=a1, power=power)) for mj, sj in zip(mu, s, strict=True)]
    best = [n for n in best if n > 0]
    within = [
        int(seeds_for(sj, delta - float(mj), alpha_one_sided=a1, power=power)) for mj, sj in zip(mu, s, strict=True)
    ]
    options = [min(best)] if best else []
    if all(n > 0 for n in within):
        options.append(max(within))
    return min(options) if options else None
