"""The answer of a run as plain data: verdicts per group, best trials, Pareto front, counts.

`summarize(records, config)` is what `summary.json` holds and what `summary.md` and the
report render. Pure Python.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tlmsearch.analysis.collect import label
from tlmsearch.analysis.front import front_axis, pareto_data
from tlmsearch.analysis.rate_check import rate_checks
from tlmsearch.analysis.regime import record_values, regime_of
from tlmsearch.analysis.sequential_extend import history_line
from tlmsearch.analysis.sequential_verdict import from_plan
from tlmsearch.analysis.verdict import Verdict, resolve_levels
from tlmsearch.analysis.verdicts import eval_kind, verdicts
from tlmsearch.configs.search import SearchConfig
from tlmsearch.noise_floor import NoiseFloor, ranking_gaps
from tlmsearch.rundir.axes import layer_axes
from tlmsearch.rundir.records import SEARCH_KINDS, TrialRecord, as_records, finished


def _trial_summary(r: TrialRecord) -> dict[str, Any]:
    return {
        "trial_id": r.trial_id,
        "kind": r.kind,
        "profile": label(r),
        "seed": r.seed,
        "val_loss": _num(r.metric("val_loss")),
        "val_ppl": _num(r.metric("val_ppl")),
        "val_bpb": _num(r.metric("val_bpb")),
        "params_total": _num(r.metric("params_total")),
        "params_non_embedding": _num(record_values(r)["non_embedding"]),
        "tokens_per_param": _num(record_values(r)["tokens_per_param"]),
        "epochs": _num(record_values(r)["epochs"]),
        "val_tokens": _num(record_values(r)["val_tokens"]),
        "widths": list(r.widths),
        **{axis: v for axis, v in layer_axes(r).items() if v is not None},  # a joint model's other axes
        "shape": r.shape,
    }


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def summarize(
    records: Iterable[Any],
    config: Mapping[str, Any] | None = None,
    *,
    threshold: float | None = None,
    confidence: float | None = None,
    method: str = "t",
    top: int = 5,
    margin: float | None = None,
    alpha: float | None = None,
    verify_plan: Mapping[str, Any] | None = None,
    noise_floor: NoiseFloor | None = None,
) -> dict[str, Any]:
    """Everything `summary.json` holds (plain, JSON-ready).

    `noise_floor` (the search's, `Study.noise_floor`): the best trials carry their gap to the
    best in its units and whether it is a tie (`tlmsearch.noise_floor`).

    `verify_plan` is what the last verify wrote (`rundir.io.read_verify`): when it matches the
    step count of the latest verify records, only its decision seeds decide (a pilot's seeds set
    the number of seeds and never enter the decision).
    """
    margin, alpha = resolve_levels(margin, alpha, threshold=threshold, confidence=confidence)
    recs = as_records(records)
    config = dict(config or {})
    arch = str(config.get("arch", "model"))
    kind = eval_kind(recs)
    verify_plan = current_plan(recs, verify_plan)
    unfinished = _unfinished(recs, verify_plan)
    plan = verify_plan if kind == "verify" and _plan_applies(recs, verify_plan) and not unfinished else None
    space = search_space(config)
    vs = run_verdicts(recs, verify_plan, margin=margin, alpha=alpha, arch=arch, method=method, space=space)
    search_kinds = ("compare",) if kind == "compare" and not finished(recs) else SEARCH_KINDS
    best = sorted(finished(recs, kinds=search_kinds), key=lambda r: r.metric("val_loss"))
    objectives = tuple(config.get("objectives") or ("val_loss",))
    x_front = front_axis(recs, objectives, kinds=search_kinds)
    front = pareto_data(recs, x=x_front, kinds=search_kinds).front if x_front else []
    counts = Counter((r.kind, r.status) for r in recs)
    notes = []
    if kind is None:
        notes.append(
            "no re-evaluation yet: run `tlmsearch verify RUN_DIR` for the verdict with error bars; "
            "a single short trial is never the basis for a claim"
        )
    elif unfinished:
        notes.append(unfinished)
    elif not vs:
        notes.append(f"the {kind} trials include no cosine profile: no verdict on cosine")
    checks = {c.group: c.to_dict() for c in rate_checks(recs, (verify_plan or {}).get("rate_check"))} if vs else {}
    return {
        "arch": arch,
        "n_records": len(recs),
        "counts": {f"{k}/{s}": n for (k, s), n in sorted(counts.items())},
        "finished": len(best),
        "evaluation": kind,
        "margin": margin,
        "threshold": margin,
        "alpha": alpha,
        "method": method,
        "verify_plan": dict(plan) if plan else None,
        "verification_history": history_line(plan) if plan else None,
        "verify_unfinished": unfinished,
        "verdicts": [v.to_dict() | {"rate_check": checks.get(v.group)} for v in vs],
        "rate_check": list(checks.values()),  # verify --rate-check: each verdict's result at half/base/twice the rate
        "regime": _regimes(recs, kind, space),
        "noise_floor": noise_floor.to_dict() if noise_floor is not None else None,
        "best": _with_gaps([_trial_summary(r) for r in best[:top]], noise_floor),
        "pareto_x": x_front,  # None: one objective at one budget, so no front (see front_axis)
        "pareto_front": [{"trial_id": p.trial_id, "profile": p.label, "x": p.x, "y": p.y} for p in front],
        "notes": notes,
    }


def _regimes(recs: Sequence[TrialRecord], kind: str | None, space: str | None = None) -> dict[str, Any]:
    """The regime (`analysis.regime`) of the search's finished trials and of the finished
    re-evaluations (`kind`), each None when there are none; `space`: the search space, whose
    degrees of freedom at the records' depth a search's regime states (a compare searched none)."""
    search, evals = finished(recs), finished(recs, kinds=(kind,)) if kind else []
    searched = space if kind != "compare" else None
    return {
        "search": r.to_dict() if (r := regime_of(search, searched)) else None,
        "evaluation": r.to_dict() if (r := regime_of(evals, searched)) else None,
    }


def _with_gaps(rows: list[dict[str, Any]], floor: NoiseFloor | None) -> list[dict[str, Any]]:
    """`rows` (best first) with `gap` (nats to the best), `gap_sd` and `tie` (None: no floor)."""
    sd = floor.sd if floor is not None and floor.usable else math.nan
    values = [math.nan if r["val_loss"] is None else r["val_loss"] for r in rows]
    return [{**r, **g} for r, g in zip(rows, ranking_gaps(values, sd), strict=True)]


def _plan_applies(records: Sequence[TrialRecord], plan: Mapping[str, Any] | None) -> bool:
    """Whether a verify plan with its deciding seeds describes the latest verify records."""
    return bool(plan and plan.get("decision_seeds")) and _same_steps(records, plan)


def _same_steps(records: Sequence[TrialRecord], plan: Mapping[str, Any] | None) -> bool:
    """Whether `plan` is that of the latest verify records (same step count)."""
    latest = [r for r in records if r.kind == "verify"]
    return bool(plan and latest) and latest[-1].max_steps == plan.get("steps")  # type: ignore[union-attr]


def current_plan(records: Iterable[Any], verify_plan: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The plan of the latest verify records: `verify_plan`, or the finished plan it keeps as
    `previous` while a verify at another step count has recorded nothing yet."""
    recs = as_records(records)
    previous = (verify_plan or {}).get("previous")
    if previous and not _same_steps(recs, verify_plan) and _same_steps(recs, previous):
        return previous  # type: ignore[no-any-return]
    return verify_plan


def verify_unfinished(records: Iterable[Any], verify_plan: Mapping[str, Any] | None) -> str | None:
    """Why there is no verdict yet when the latest verify stopped (or is still running) before
    its deciding seeds were all trained; None when it finished, or when no plan says otherwise.

    `verify` writes its plan with `complete: false` before it trains and sets it when the last
    deciding run has ended (files without the key come from finished verifies). A verdict on an
    unfinished verify would decide on the pilot's seeds or on part of the planned seeds.
    """
    recs = as_records(records)
    return _unfinished(recs, current_plan(recs, verify_plan))


def _unfinished(recs: Sequence[TrialRecord], verify_plan: Mapping[str, Any] | None) -> str | None:
    """`verify_unfinished` for records already read and the plan `current_plan` chose."""
    if eval_kind(recs) != "verify" or not verify_plan or verify_plan.get("complete", True):
        return None
    if not _same_steps(recs, verify_plan):
        return None
    runs = [r for r in recs if r.kind == "verify" and r.max_steps == verify_plan.get("steps")]
    pilot, decide = list(verify_plan.get("pilot_seeds") or []), list(verify_plan.get("decision_seeds") or [])
    again = "run `tlmsearch verify RUN_DIR` again to finish it (finished runs are reused); no verdict until then"
    if not decide:
        done = sum(r.seed in pilot for r in finished(runs, kinds=("verify",)))
        seeds = f" (seeds {pilot[0]}..{pilot[-1]})" if pilot else ""
        return (
            f"verification unfinished: {done} run{'' if done == 1 else 's'} of its pilot{seeds} recorded, "
            f"the deciding seeds not yet planned; {again}"
        )
    profiles = {label(r) for r in runs}
    done = sum(r.seed in decide for r in finished(runs, kinds=("verify",)))
    return (
        f"verification unfinished: {done} of {len(profiles) * len(decide)} runs of the deciding seeds "
        f"{decide[0]}..{decide[-1]} recorded; {again}"
    )


def search_space(config: Mapping[str, Any]) -> str:
    """The search space of a run's config as its search.yaml holds it (SearchConfig's default when
    the file leaves it out, as loading it would give)."""
    return str(config.get("space") or SearchConfig.__dataclass_fields__["space"].default)


def run_verdicts(
    records: Iterable[Any],
    verify_plan: Mapping[str, Any] | None,
    *,
    margin: float | None = None,
    alpha: float | None = None,
    arch: str = "model",
    method: str = "t",
    space: str | None = None,
) -> list[Verdict]:
    """A run's verdicts as `tlmsearch report` gives them: from its verify records (only the
    deciding seeds of `verify_plan`, `rundir.io.read_verify`; none while that verify is
    unfinished), else from its compare records; empty before either. `space`: the search space
    of a verified search (its degrees of freedom at the records' depth go into the regime line);
    a candidate trained once under one of its names shows all of them (the plan's `aliases`)."""
    recs = as_records(records)
    kind = eval_kind(recs)
    plan = current_plan(recs, verify_plan)
    if kind is None or _unfinished(recs, plan):
        return []
    seeds = _plan_seeds(recs, plan) if kind == "verify" else None
    reference = (plan or {}).get("reference")  # what a verify or a comparison compared with (None: cosine)
    if seeds is not None and plan and plan.get("sequential"):  # verify --looks: re-decide sequentially
        return from_plan(recs, plan["sequential"], arch=arch, method=method, reference=reference)
    aliases = (plan or {}).get("aliases")  # a verify's or a comparison's (`rundir.io.read_verify`)
    return verdicts(
        recs,
        margin=margin,
        alpha=alpha,
        arch=arch,
        kinds=(kind,),
        method=method,
        seeds=seeds,
        aliases=aliases if isinstance(aliases, Mapping) else None,
        space=space if kind == "verify" else None,
        reference=reference if isinstance(reference, str) else None,
    )


def recorded_verdicts(
    records: Iterable[Any], verify_plan: Mapping[str, Any] | None, *, arch: str = "model", space: str | None = None
) -> list[Verdict]:
    """The verdicts of a run at the levels its verification recorded: `run_verdicts` at the
    margin and alpha of `verify_plan` (`rundir.io.read_verify`; the defaults where it records
    none). A level damaged by hand raises ConfigError (`decision.check_levels`)."""
    plan = verify_plan or {}
    return run_verdicts(records, plan, margin=plan.get("margin"), alpha=plan.get("alpha"), arch=arch, space=space)


def decision_seeds(records: Iterable[Any], verify_plan: Mapping[str, Any] | None) -> list[int] | None:
    """The seeds a verify plan says decide, when it applies to the records (else None: all)."""
    recs = as_records(records)
    return _plan_seeds(recs, current_plan(recs, verify_plan))


def _plan_seeds(recs: Sequence[TrialRecord], plan: Mapping[str, Any] | None) -> list[int] | None:
    """`decision_seeds` for records already read and the plan `current_plan` chose."""
    return list(plan["decision_seeds"]) if plan and _plan_applies(recs, plan) else None


__all__ = [
    "current_plan",
    "decision_seeds",
    "eval_kind",
    "recorded_verdicts",
    "run_verdicts",
    "summarize",
    "verdicts",
    "verify_unfinished",
]
