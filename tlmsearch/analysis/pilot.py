"""From a verify pilot to the seeds that decide: the planned-seeds design of `verify --seeds auto`.

`verify` first trains every chosen profile with a few pilot seeds, then this module reads those
records, measures the spread of the paired log-perplexity gains over the reference the verdict
compares with (cosine 1.5 -> 0.5 unless `verify --reference` chose another; per budget, per
candidate: the sd of the per-seed differences, so the correlation pairing by seed leaves between
the reference and a candidate is in it; `analysis.pairing` also states that correlation and the
unpaired sd it saves) and asks `planning.plan_seeds` how many FRESH seeds make the one-sided bounds tight
against the margin. The pilot's values only set the number of seeds; the decision uses the
fresh seeds alone (`decision_seeds`), once, so the tests keep their level (see `planning`).

Pure functions over `TrialRecord`s; the timing of the pilot and the training are `tuning`'s.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tlmsearch.analysis.collect import profile_results
from tlmsearch.analysis.pairing import pairing
from tlmsearch.analysis.planning import SeedPlan, at_least, plan_seeds
from tlmsearch.analysis.stats import MIN_BOOTSTRAP_SEEDS
from tlmsearch.analysis.verdict import find_reference, reference_name
from tlmsearch.configs.verify import DEFAULT_MAX_SEEDS
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.records import as_records


@dataclass(frozen=True)
class PilotSpread:
    """The pilot's paired spread: the largest sd of a candidate's log gain over the reference."""

    sd: float  # nats (log perplexity), the largest over candidates and budgets
    n_candidates: int  # candidates against the reference in the largest budget group
    n_pairs: int  # fewest paired pilot seeds behind an sd
    worst: str  # the candidate whose gains spread the most
    correlation: float | None = None  # median seed correlation of the reference and a candidate (log perplexity)
    unpaired_sd: float | None = None  # the worst candidate's unpaired sd, sqrt(sd_reference^2 + sd_candidate^2)


def pilot_spread(
    records: Iterable[Any],
    seeds: Sequence[int],
    *,
    reference: str | None = None,
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> PilotSpread:
    """The spread of the pilot records (kind "verify", seeds `seeds`) of every budget's
    candidates against that budget's reference (`reference`, a profile text: the one the verdict
    compares with, recognised by its model as `verdict.find_reference` does; None: cosine 1.5 ->
    0.5). `aliases`: verify.json's names of candidates trained once under another's. A
    `ConfigError` when fewer than 2 pilot seeds of some candidate and the reference both
    finished: the spread cannot be measured."""
    keep = set(seeds)
    recs = [r for r in as_records(records) if r.kind != "verify" or r.seed in keep]
    groups: dict[tuple[int, int], list[Any]] = {}
    by_id = {r.trial_id: r for r in recs}
    for res in profile_results(recs, kinds=("verify",), aliases=aliases):
        groups.setdefault(by_id[res.trial_ids[0]].budget_key, []).append(res)
    sd, m, pairs, worst = -1.0, 0, 0, ""
    correlations: list[float] = []
    unpaired: float | None = None
    for group in groups.values():
        ref = find_reference(group, reference)
        if ref is None:
            continue
        candidates = [r for r in group if r is not ref]
        m = max(m, len(candidates))
        for c in candidates:
            common = sorted(set(c.ppl) & set(ref.ppl))
            if len(common) < 2:
                raise ConfigError(
                    f"the pilot finished only {len(common)} paired seed(s) of {c.label} and {ref.label}: no spread "
                    "to plan from (see trials.jsonl for failed trials; a fixed --seeds N needs no pilot)"
                )
            p = pairing([math.log(ref.ppl[k]) for k in common], [math.log(c.ppl[k]) for k in common])
            s = p.paired_sd
            if math.isfinite(p.correlation):
                correlations.append(p.correlation)
            pairs = min(pairs, len(common)) if pairs else len(common)
            if s > sd:
                sd, worst, unpaired = s, c.label, p.unpaired_sd
    if m == 0:
        raise ConfigError(
            f"the pilot has no finished {reference_name(reference)} and candidate pair: nothing to plan from"
        )
    corr = statistics.median(correlations) if correlations else None
    return PilotSpread(sd, m, pairs, worst, corr, unpaired)


def plan_from_pilot(
    records: Iterable[Any],
    pilot: Sequence[int],
    *,
    margin: float,
    alpha: float,
    max_seeds: int = DEFAULT_MAX_SEEDS,
    power: float = 0.8,
    method: str = "t",
    reference: str | None = None,
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> tuple[SeedPlan, PilotSpread]:
    """The seed plan from the pilot records of seeds `pilot` (see `planning.plan_seeds`), from
    the spreads against `reference` (`pilot_spread`); with the bootstrap, at least
    `MIN_BOOTSTRAP_SEEDS` fresh seeds (within the cap)."""
    spread = pilot_spread(records, pilot, reference=reference, aliases=aliases)
    plan = plan_seeds(
        sd=spread.sd,
        pilot_seeds=len(pilot),
        margin=margin,
        alpha=alpha,
        n_candidates=spread.n_candidates,
        power=power,
        max_seeds=max_seeds,
    )
    if method == "bootstrap":  # the BCa interval is valid from MIN_BOOTSTRAP_SEEDS seeds only
        plan = at_least(plan, MIN_BOOTSTRAP_SEEDS)
    return replace(plan, correlation=spread.correlation, unpaired_sd=spread.unpaired_sd), spread


def decision_seeds(plan: SeedPlan, pilot: Sequence[int]) -> list[int]:
    """The fresh seeds that decide: the `plan.final_seeds` seed numbers right after the pilot's."""
    start = max(pilot) + 1
    return [start + i for i in range(plan.final_seeds)]


__all__ = [
    "DEFAULT_MAX_SEEDS",
    "PilotSpread",
    "decision_seeds",
    "pilot_spread",
    "plan_from_pilot",
]
