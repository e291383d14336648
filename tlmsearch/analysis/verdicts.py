"""The verdicts of a run's seed-paired re-evaluations, one per budget (`verdicts`), and which
kind of re-evaluation the records hold (`eval_kind`).

Below both `summary` (a run's answer as plain data) and `sequential_verdict` (the verdicts of a
group-sequential verification), which each build on these. Pure Python.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from tlmsearch.analysis.collect import profile_results
from tlmsearch.analysis.regime import regime_of
from tlmsearch.analysis.verdict import Verdict, find_reference, resolve_levels, verdict
from tlmsearch.rundir.records import EVAL_KINDS, as_records


def eval_kind(records: Iterable[Any]) -> str | None:
    """ "verify" or "compare": which seed-paired re-evaluations the records hold (None: neither)."""
    kinds = {r.kind for r in as_records(records)}
    return next((k for k in EVAL_KINDS if k in kinds), None)


def verdicts(
    records: Iterable[Any],
    *,
    threshold: float | None = None,
    confidence: float | None = None,
    arch: str = "model",
    kinds: Sequence[str] = EVAL_KINDS,
    method: str = "t",
    margin: float | None = None,
    alpha: float | None = None,
    seeds: Collection[int] | None = None,
    aliases: Mapping[str, Sequence[str]] | None = None,
    space: str | None = None,
    reference: str | None = None,
) -> list[Verdict]:
    """One verdict per budget among the re-evaluated profiles that include cosine.

    `margin`/`alpha` (old names `threshold` and `confidence` = 1 - alpha) as in `verdict`;
    `seeds` restricts the decision to those seeds (e.g. the seeds after a pilot). Profiles that
    build one model are one candidate (`collect.profile_results`; `aliases`: verify.json's other
    names of a candidate trained once); `space`, the search space, goes into the regime line
    with the depth and its degrees of freedom. `reference` (a profile text, None: cosine 1.5 -> 0.5)
    is what every candidate is compared with; a budget without it has no verdict.
    When re-evaluations were run with different step counts (`verify --steps`), only those with
    the step count of the latest one are compared: pairs must share the training length.
    """
    margin, alpha = resolve_levels(margin, alpha, threshold=threshold, confidence=confidence)
    recs = {r.trial_id: r for r in as_records(records)}
    evals = [r for r in recs.values() if r.kind in kinds]
    if evals:
        steps = evals[-1].max_steps
        recs = {k: r for k, r in recs.items() if r.kind not in kinds or r.max_steps == steps}
    by_budget: dict[tuple[int, int], list[Any]] = {}
    for res in profile_results(recs.values(), kinds=kinds, aliases=aliases):
        by_budget.setdefault(recs[res.trial_ids[0]].budget_key, []).append(res)
    out = []
    for (n_layers, base), group in sorted(by_budget.items()):
        if find_reference(group, reference) is None:
            continue
        name = arch if len(by_budget) == 1 else f"{arch} ({n_layers} layers x {base})"
        v = verdict(group, margin=margin, alpha=alpha, group=name, method=method, seeds=seeds, reference=reference)
        deciding = [recs[t] for res in group for t in res.trial_ids if seeds is None or recs[t].seed in set(seeds)]
        out.append(v.with_regime(regime_of(deciding, space)))  # the headline states its regime
    return out


__all__ = ["eval_kind", "verdicts"]
