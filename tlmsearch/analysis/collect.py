"""From trial records to the analysis's inputs: finished trials, labels, baselines, and the
seed-paired `ProfileResult`s of re-evaluated profiles.

Records may be `TrialRecord`s or their plain dicts (as read from `trials.jsonl`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from tlmsearch.analysis.verdict import COSINE, UNIFORM, ProfileResult

SEARCH_KINDS = ("baseline", "sampled")


def as_dict(record: Any) -> dict[str, Any]:
    """A record as a plain dict (TrialRecord, dict, or anything with `to_dict`)."""
    if isinstance(record, dict):
        return record
    return dict(record.to_dict())


def metric(record: Any, name: str = "val_loss") -> float:
    """The final value of `name` (nan when missing)."""
    value = as_dict(record).get("metrics", {}).get(name)
    if value is None and name == "val_ppl":
        loss = as_dict(record).get("metrics", {}).get("val_loss")
        value = math.exp(loss) if loss is not None else None
    return float(value) if value is not None else math.nan


def finished(
    records: Iterable[Any], kinds: Sequence[str] = SEARCH_KINDS, metric_name: str = "val_loss"
) -> list[dict[str, Any]]:
    """Complete, full-fidelity records of the given kinds that have a finite `metric_name`.

    Trials stopped early (ASHA) report partial values and never enter fronts or rankings.
    """
    out = []
    for r in map(as_dict, records):
        if r.get("kind") not in kinds or r.get("status") != "complete" or not r.get("full_fidelity"):
            continue
        if math.isfinite(metric(r, metric_name)):
            out.append(r)
    return out


def label(record: Any) -> str:
    """Canonical profile text, e.g. `cosine:start=1.5,end=0.5` (falls back to the family)."""
    prof = as_dict(record).get("profile") or {}
    family = prof.get("family", "?")
    params = prof.get("params") or {}
    try:
        from tlmsearch.profiles import ProfileSpec

        return str(ProfileSpec(family=family, params=dict(params)))
    except Exception:  # an unknown family in an old record: still label it
        items = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())
        return f"{family}:{items}" if items else family


def baseline_name(record: Any) -> str | None:
    """ "cosine" (the paper's 1.5 -> 0.5 taper), "uniform", another baseline's text, or None."""
    r = as_dict(record)
    prof = r.get("profile") or {}
    family, params = prof.get("family"), prof.get("params") or {}
    if family == UNIFORM:
        return UNIFORM
    if family == COSINE and float(params.get("start", 1.5)) == 1.5 and float(params.get("end", 0.5)) == 0.5:
        return COSINE
    return r.get("baseline") or None


def budget_key(record: Any) -> tuple[int, int]:
    b = as_dict(record).get("budget") or {}
    return int(b.get("n_layers", len(as_dict(record).get("widths", ())))), int(b.get("base_width", 0))


def ranked(
    records: Iterable[Any], metric_name: str = "val_loss", kinds: Sequence[str] = SEARCH_KINDS
) -> list[dict[str, Any]]:
    """Finished records of `kinds`, best first (ties keep their order)."""
    return sorted(finished(records, kinds=kinds, metric_name=metric_name), key=lambda r: metric(r, metric_name))


def search_scores(records: Iterable[Any], metric_name: str = "val_loss") -> dict[tuple[int, ...], float]:
    """Mean search-time score per distinct widths tuple (finished search records only)."""
    by: dict[tuple[int, ...], list[float]] = {}
    for r in finished(records, metric_name=metric_name):
        by.setdefault(tuple(r["widths"]), []).append(metric(r, metric_name))
    return {w: statistics.fmean(v) for w, v in by.items()}


def search_steps(records: Iterable[Any]) -> dict[tuple[int, ...], int]:
    """Training steps of the finished search records per distinct widths tuple (the largest when
    several differ): what a search-time score was measured after."""
    out: dict[tuple[int, ...], int] = {}
    for r in finished(records):
        if r.get("max_steps") is not None:
            w = tuple(r["widths"])
            out[w] = max(out.get(w, 0), int(r["max_steps"]))
    return out


def profile_results(records: Iterable[Any], kinds: Sequence[str] = ("verify",)) -> list[ProfileResult]:
    """One `ProfileResult` per distinct (profile, widths, budget) among finished records of `kinds`.

    Two profiles that give the same widths (e.g. groups:late and uniform on 2 layers) stay
    separate rows, as asked. Several records of the same profile and seed (a re-run) keep the
    first. The search-time score of the same widths, when the search trained it to full
    fidelity, is attached.
    """
    records = [as_dict(r) for r in records]
    scores = search_scores(records)
    steps = search_steps(records)
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in finished(records, kinds=kinds):
        groups.setdefault((label(r), tuple(r["widths"]), budget_key(r)), []).append(r)
    out = []
    for (_, widths, _), rs in groups.items():
        loss: dict[int, float] = {}
        ppl: dict[int, float] = {}
        for r in rs:
            seed = int(r.get("seed", 0))
            if seed not in loss:
                loss[seed] = metric(r, "val_loss")
                ppl[seed] = metric(r, "val_ppl")
        first = rs[0]
        out.append(
            ProfileResult(
                label=label(first),
                widths=widths,
                loss=loss,
                ppl=ppl,
                baseline=baseline_name(first),
                profile=first.get("profile") or {},
                shape=first.get("shape") or {},
                search_score=scores.get(widths),
                trial_ids=tuple(r["trial_id"] for r in rs),
                steps=int(first["max_steps"]) if first.get("max_steps") is not None else None,
                search_steps=steps.get(widths) if widths in scores else None,
            )
        )
    return out
