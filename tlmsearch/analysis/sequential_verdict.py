"""The verdict of a group-sequential verification, from its records (pure).

`verify --looks K` trains the seeds in stages; after each stage this module reads the verify
records, builds each budget's paired log gains over its reference (cosine 1.5 -> 0.5, or the
profile `--reference` names, recognised by the model it builds as the fixed verdict does) in the
design's seed order, applies `sequential.decide` (the same function the simulation measures)
through the looks taken, and says which candidates are still undecided (they, and the reference,
train the next stage). Its verdict is the fixed verdict's table and comparisons on the seeds
trained, with the sequential outcome, the repeated confidence intervals of the candidates against
the reference, and a headline that says it was sequential: the looks used and the seeds used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from tlmsearch.analysis.collect import profile_results
from tlmsearch.analysis.decision import OUTCOMES
from tlmsearch.analysis.headline import describe_shape, level, pct
from tlmsearch.analysis.sequential import Design, Sequential, decide
from tlmsearch.analysis.stats import Interval
from tlmsearch.analysis.verdict import ProfileResult, Verdict, find_reference, reference_name
from tlmsearch.analysis.verdicts import verdicts
from tlmsearch.core.words import plural
from tlmsearch.rundir.records import as_records


@dataclass(frozen=True)
class SequentialGroup:
    """One budget's sequential decision after the looks taken."""

    group: str
    base_width: int
    cosine: str  # the reference's label (cosine 1.5 -> 0.5 unless verify named another), as `Verdict.cosine`
    candidates: tuple[str, ...]  # labels, in the order of the decision's arrays
    decision: Sequential  # one study: arrays shaped () and (m,)
    looks_taken: int

    @property
    def active(self) -> tuple[str, ...]:
        """Candidates still undecided after the looks taken: with the reference, they train the next stage."""
        return tuple(c for j, c in enumerate(self.candidates) if bool(self.decision.active[j]))

    @property
    def running(self) -> bool:
        return bool(self.active) and self.looks_taken < self.decision.design.n_looks

    def seeds_used(self) -> dict[str, int]:
        looks = self.decision.design.looks
        out = {self.cosine: looks[int(self.decision.last_look)]}
        out.update({c: looks[int(self.decision.stop_look[j])] for j, c in enumerate(self.candidates)})
        return out

    def to_dict(self) -> dict[str, Any]:
        d = self.decision
        return {
            "group": self.group,
            "design": d.design.to_dict(),
            "looks_taken": self.looks_taken,
            "last_look": int(d.last_look) + 1,
            "outcome": OUTCOMES[int(d.outcome)],
            "seeds_used": self.seeds_used(),
            "runs": int(sum(self.seeds_used().values())),
            "runs_all_looks": d.design.max_seeds * (len(self.candidates) + 1),
            "decided_look": {c: int(d.decided_look[j]) + 1 or None for j, c in enumerate(self.candidates)},
            "active": list(self.active),
            "stage": d.design.stage_of(int(d.last_look)) + 1,
            "alpha_spent": self.alpha_spent,
        }

    @property
    def alpha_spent(self) -> float:
        """The level the whole history has spent by the last look taken (its stage's alpha)."""
        return self.decision.design.alpha_through(int(self.decision.last_look))


def gains(reference: ProfileResult, candidate: ProfileResult, seeds: Sequence[int]) -> np.ndarray:
    """Paired log gains log(ppl_reference) - log(ppl_candidate) at `seeds` in order (nan: missing)."""
    out = np.full(len(seeds), np.nan)
    for i, s in enumerate(seeds):
        if s in reference.ppl and s in candidate.ppl:
            out[i] = math.log(reference.ppl[s]) - math.log(candidate.ppl[s])
    return out


def decide_groups(
    records: Iterable[Any],
    design: Design,
    seeds: Sequence[int],
    *,
    through: int,
    arch: str = "model",
    kinds: Sequence[str] = ("verify",),
    settle: bool = True,
    reference: str | None = None,
) -> list[SequentialGroup]:
    """The sequential decision of each budget among the records (`seeds`: the design's seeds in
    training order, at least the first look's; `through`: the looks taken; `reference`: the profile
    text every candidate is compared with, None: cosine 1.5 -> 0.5)."""
    recs = {r.trial_id: r for r in as_records(records)}
    by_budget: dict[tuple[int, int], list[ProfileResult]] = {}
    for res in profile_results(recs.values(), kinds=kinds):
        by_budget.setdefault(recs[res.trial_ids[0]].budget_key, []).append(res)
    out = []
    n = design.looks[through - 1]
    for (n_layers, base), group in sorted(by_budget.items()):
        cos = find_reference(group, reference)
        if cos is None:
            continue
        cands = sorted((r for r in group if r is not cos), key=lambda r: r.label)
        if not cands:
            continue
        d = np.vstack([gains(cos, c, seeds[:n]) for c in cands])
        name = arch if len(by_budget) == 1 else f"{arch} ({n_layers} layers x {base})"
        out.append(
            SequentialGroup(
                name,
                base,
                cos.label,
                tuple(c.label for c in cands),
                decide(d, design, through=through, settle=settle),
                through,
            )
        )
    return out


def sequential_verdicts(
    records: Iterable[Any],
    design: Design,
    seeds: Sequence[int],
    *,
    through: int,
    arch: str = "model",
    kinds: Sequence[str] = ("verify",),
    method: str = "t",
    settle: bool = True,
    reference: str | None = None,
) -> list[tuple[Verdict, SequentialGroup]]:
    """Each budget's verdict with its sequential decision: the fixed verdict's table on the seeds
    trained, its outcome, comparisons against the reference (`reference`, None: cosine 1.5 -> 0.5)
    and headline replaced by the sequential ones."""
    records = list(records)
    decided = decide_groups(
        records, design, seeds, through=through, arch=arch, kinds=kinds, settle=settle, reference=reference
    )
    groups = {g.group: g for g in decided}
    trained = list(seeds[: design.looks[through - 1]])
    out = []
    for v in verdicts(
        records,
        margin=design.margin,
        alpha=design.alpha,
        arch=arch,
        kinds=kinds,
        method=method,
        seeds=trained,
        reference=reference,
    ):
        g = groups.get(v.group)
        if g is not None:
            out.append((_sequential(v, g, records, kinds, reference_name(reference)), g))
    return out


def from_plan(
    records: Iterable[Any],
    sequential: Mapping[str, Any],
    *,
    arch: str = "model",
    method: str = "t",
    reference: str | None = None,
) -> list[Verdict]:
    """The verdicts a finished `verify --looks` recorded in verify.json ("sequential": its design,
    seeds and looks taken; `reference`: its "reference", None: cosine), re-decided from the records
    (`tlmsearch report`)."""
    design = Design.from_dict(sequential["design"])
    through = max(1, int(sequential.get("looks_taken") or 1))
    seeds = [int(s) for s in sequential["seeds"]]
    found = sequential_verdicts(records, design, seeds, through=through, arch=arch, method=method, reference=reference)
    return [v for v, _ in found]


def _sequential(v: Verdict, g: SequentialGroup, records: list[Any], kinds: Sequence[str], ref: str) -> Verdict:
    d, design = g.decision, g.decision.design
    m = len(g.candidates)
    conf = 1.0 - 2.0 * design.alpha / m
    index = {c: j for j, c in enumerate(g.candidates)}
    used = g.seeds_used()

    def rci(j: int) -> Interval:
        return Interval(
            math.expm1(float(d.mean[j])), _expm1(float(d.low[j])), _expm1(float(d.high[j])), used[g.candidates[j]], conf
        )

    comparisons = tuple(
        replace(
            c,
            gain=rci(index[c.label]),
            p_better=None,
            p_within=None,
            shown_better=bool(d.shown_better[index[c.label]]),
            within_margin=bool(d.within_margin[index[c.label]]),
        )
        if c.reference == g.cosine and c.label in index
        else c
        for c in v.comparisons
    )
    winners = [j for j in range(m) if d.shown_better[j]]
    best = max(winners, key=lambda j: float(d.low[j])) if winners else None
    results = {r.label: r for r in profile_results(records, kinds=kinds)}
    better = g.candidates[best] if best is not None else None
    clears = None if best is None else math.expm1(float(d.low[best])) > design.margin
    better_result = results.get(better) if better else None
    outcome = OUTCOMES[int(d.outcome)]
    text = _headline(outcome, g, best, clears, conf, better_result.shape if better_result else {}, ref)
    new = replace(
        v,
        outcome=outcome,
        headline=text,
        confidence=conf,
        better=better,
        better_clears_margin=clears,
        better_widths=tuple(better_result.widths) if better_result else None,
        better_shape=dict(better_result.shape) if better_result else None,
        within_margin=bool(d.within_margin.all()),
        regret=Interval(  # the largest gain over the reference: the repeated intervals' ends, at 1 - 2 alpha
            _expm1(float(np.max(d.mean))),
            _expm1(float(np.max(d.low))),
            _expm1(float(np.max(d.high))),
            min(used.values()),
            1.0 - 2.0 * design.alpha,
        ),
        seeds_to_decide=v.seeds_to_decide if outcome == "inconclusive" else None,
        comparisons=comparisons,
        table=tuple(_row(r, index, rci) for r in v.table),
        regime=None,
    )
    return new.with_regime(v.regime)


def _row(row: Mapping[str, Any], index: Mapping[str, int], rci: Any) -> dict[str, Any]:
    """A table row with the candidate's repeated-confidence interval against the reference (its mean
    perplexity stays over its own seeds: a candidate stopped early has fewer)."""
    out = dict(row)
    if row.get("label") in index and row.get("gain_vs_cosine") is not None:
        out["gain_vs_cosine"] = rci(index[row["label"]]).to_dict()
        out["p_better"] = out["p_within"] = None
    return out


def _expm1(x: float) -> float:
    return x if math.isinf(x) or math.isnan(x) else math.expm1(x)


def sequential_clause(g: SequentialGroup) -> str:
    """'group-sequential: stopped at look 2 of 4 (24 of 48 seeds); 120 runs of 432 for all looks'."""
    d, design = g.decision, g.decision.design
    used = g.seeds_used()
    runs = sum(used.values())
    total = design.max_seeds * (len(g.candidates) + 1)
    spend = {"obf": "O'Brien-Fleming-type", "pocock": "Pocock-type", "nominal": "no"}[design.spending]
    text = (
        f"group-sequential: {int(d.last_look) + 1} of {design.n_looks} looks ({design.looks[int(d.last_look)]} of "
        f"{design.max_seeds} seeds per profile), {spend} alpha spending, one-sided t tests at alpha {design.alpha:g}, "
        f"Holm over {plural(len(g.candidates), 'candidate')} at each look, decided candidates stopped: "
        f"{runs} runs of the {total} all looks would take"
    )
    if design.stages:
        text += (
            f"; {design.history_text()}; stopped in stage {design.stage_of(int(d.last_look)) + 1}: alpha spent by "
            f"the whole history {g.alpha_spent:g}"
        )
    return text


def _headline(
    outcome: str, g: SequentialGroup, best: int | None, clears: bool | None, conf: float, shape: Any, ref: str
) -> str:
    """The sentence; `ref` names the reference every candidate is compared with ("cosine" by default)."""
    d, design = g.decision, g.decision.design
    mpct = f"{design.margin:.1%}"
    how = sequential_clause(g)
    if outcome == "better" and best is not None:
        look = int(d.decided_look[best]) + 1
        verb = "also clears" if clears else "does not clear"
        return (
            f"a better profile than {ref} exists: {g.candidates[best]} has "
            f"{math.expm1(float(d.mean[best])):.2%} lower "
            f"perplexity ({level(conf)} repeated-confidence interval {pct(_expm1(float(d.low[best])))} to "
            f"{pct(_expm1(float(d.high[best])))}), shown at look {look}; its lower bound {verb} the {mpct} margin "
            f"({how}){describe_shape(shape)}"
        )
    if outcome == "near_optimal":
        return (
            f"{ref} is near-optimal within the {mpct} margin: every candidate's perplexity gain over {ref} is shown "
            f"below it ({how}); {ref}'s regret {pct(_expm1(float(np.max(d.mean))))} "
            f"[{pct(_expm1(float(np.max(d.low))))}, {pct(_expm1(float(np.max(d.high))))}] "
            f"({level(1.0 - 2.0 * design.alpha)} simultaneous, repeated-confidence)"
        )
    open_ = [c for j, c in enumerate(g.candidates) if not (d.shown_better[j] or d.within_margin[j])]
    return (
        f"inconclusive: no candidate is shown better than {ref}, and not every candidate is shown within the {mpct} "
        f"margin after every look ({how}); undecided: {', '.join(open_)}"
    )


__all__ = ["SequentialGroup", "decide_groups", "from_plan", "gains", "sequential_clause", "sequential_verdicts"]
