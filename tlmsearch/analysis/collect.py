"""From trial records to the analysis's inputs: labels, baselines, rankings, and the
seed-paired `ProfileResult`s of re-evaluated profiles.

Pure functions over `TrialRecord`s (plain dicts as read from `trials.jsonl` are accepted and
turned into records once, by `rundir.as_records`). What a finished trial is and how a metric
is read are defined once, on `TrialRecord` (`finished`, `metric`).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tlmsearch.analysis.verdict import COSINE, UNIFORM, ProfileResult
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.axes import layer_axes
from tlmsearch.rundir.records import SEARCH_KINDS, TrialRecord, as_records, finished


def profile_label(profile: Mapping[str, Any]) -> str:
    """Canonical profile text, e.g. `cosine:start=1.5,end=0.5` (falls back to the family)."""
    family = profile.get("family", "?")
    params = profile.get("params") or {}
    try:
        return str(ProfileSpec(family=family, params=dict(params)))
    except Exception:  # an unknown family in an old record: still label it
        items = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())
        return f"{family}:{items}" if items else family


def brief_label(profile: Mapping[str, Any], digits: int = 3) -> str:
    """`profile_label` with its numbers cut to `digits` significant digits, for one-line views
    (a sampled knots profile's exact text runs to 150 characters); not a profile's identity."""
    family = profile.get("family", "?")
    params = profile.get("params") or {}
    items = ",".join(f"{k}={v:.{digits}g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())
    return f"{family}:{items}" if items else str(family)


_LONG_NUMBER = re.compile(r"(?<==)-?\d+\.\d{4,}(?:e-?\d+)?")


def brief_text(text: str, digits: int = 3) -> str:
    """`text` with every profile parameter written to more than 3 decimals ("k0=1.9130240708769255")
    cut to `digits` significant digits ("k0=1.91"), as `brief_label` writes them; for display."""
    return _LONG_NUMBER.sub(lambda m: f"{float(m.group(0)):.{digits}g}", text)


def label(record: TrialRecord) -> str:
    """The canonical text of the record's profile."""
    return profile_label(record.profile)


def profile_baseline(profile: Mapping[str, Any]) -> str | None:
    """ "cosine" (the paper's 1.5 -> 0.5 taper), "uniform", or None."""
    family, params = profile.get("family"), profile.get("params") or {}
    if family == UNIFORM:
        return UNIFORM
    if family == COSINE and float(params.get("start", 1.5)) == 1.5 and float(params.get("end", 0.5)) == 0.5:
        return COSINE
    return None


def baseline_name(record: TrialRecord) -> str | None:
    """ "cosine", "uniform", another baseline's text, or None."""
    return profile_baseline(record.profile) or record.baseline or None


def ranked(
    records: Iterable[Any], metric_name: str = "val_loss", kinds: Sequence[str] = SEARCH_KINDS
) -> list[TrialRecord]:
    """Finished records of `kinds`, best first (ties keep their order)."""
    return sorted(finished(records, kinds=kinds, metric_name=metric_name), key=lambda r: r.metric(metric_name))


ArchKey = tuple[tuple[int, ...], ...]  # `TrialRecord.arch_key`: MLP widths and a joint model's other axes


def search_scores(records: Iterable[Any], metric_name: str = "val_loss") -> dict[ArchKey, float]:
    """Mean search-time score per distinct architecture (`TrialRecord.arch_key`: the MLP widths
    and, for joint profiles, the per-layer heads and block widths; finished search records only).
    A query-head taper whose MLP stays uniform is another model than uniform: it gets no score of
    uniform's."""
    by: dict[ArchKey, list[float]] = {}
    for r in finished(records, metric_name=metric_name):
        by.setdefault(r.arch_key, []).append(r.metric(metric_name))
    return {key: statistics.fmean(v) for key, v in by.items()}


def search_steps(records: Iterable[Any]) -> dict[ArchKey, int]:
    """Training steps of the finished search records per distinct architecture (`arch_key`; the
    largest when several differ): what a search-time score was measured after."""
    out: dict[ArchKey, int] = {}
    for r in finished(records):
        if r.max_steps:  # 0: a record that does not say
            out[r.arch_key] = max(out.get(r.arch_key, 0), r.max_steps)
    return out


def profile_results(
    records: Iterable[Any], kinds: Sequence[str] = ("verify",), aliases: Mapping[str, Sequence[str]] | None = None
) -> list[ProfileResult]:
    """One `ProfileResult` per distinct (architecture, budget) among finished records of `kinds`
    (the architecture: `TrialRecord.arch_key`, the one identity of a built model, `configs.identity`:
    the MLP widths and a joint model's heads and block widths, which the result carries as `axes`).

    Profiles that build the same model (cosine and linear 1.5 -> 0.5 on 2 layers, trained apart by
    runs from before they were merged) are ONE candidate, counted once: its label is the profile
    it was trained as (a baseline's first, else the first trained), `names` every profile text it
    stands for, those of `aliases` (label -> other texts: verify.json's, for a candidate trained once
    under one of its names) included. Several records of one seed keep the first (the label's
    first). The search-time score of the same architecture, when the search trained it to full
    fidelity, is attached.
    """
    recs = as_records(records)
    scores = search_scores(recs)
    steps = search_steps(recs)
    groups: dict[tuple[Any, ...], dict[str, list[TrialRecord]]] = {}
    for r in finished(recs, kinds=kinds):
        groups.setdefault((r.arch_key, r.budget_key), {}).setdefault(label(r), []).append(r)
    out = []
    for (key, _), by_label in groups.items():
        ordered = sorted(by_label, key=lambda text: baseline_name(by_label[text][0]) not in (COSINE, UNIFORM))
        rs = [r for text in ordered for r in by_label[text]]
        loss: dict[int, float] = {}
        ppl: dict[int, float] = {}
        for r in rs:
            if r.seed not in loss:
                loss[r.seed] = r.metric("val_loss")
                ppl[r.seed] = r.metric("val_ppl")
        first = rs[0]
        names = [n for text in ordered for n in (text, *(aliases or {}).get(text, ()))]
        out.append(
            ProfileResult(
                label=label(first),
                widths=key[0],
                loss=loss,
                ppl=ppl,
                baseline=baseline_name(first),
                profile=first.profile,
                shape=first.shape,
                search_score=scores.get(key),
                trial_ids=tuple(r.trial_id for r in rs),
                steps=first.max_steps or None,
                search_steps=steps.get(key) if key in scores else None,
                axes={axis: v for axis, v in layer_axes(first).items() if v is not None},
                names=tuple(dict.fromkeys(names)) if len(set(names)) > 1 else (),
            )
        )
    return out


def seed_noise_floor(records: Iterable[Any], steps: int, metric_name: str = "val_loss") -> tuple[float, int] | None:
    """(pooled relative sd of `metric_name` across training seeds of one profile, profiles
    pooled) over the finished trials of `steps` steps (search, baseline, verify, ... alike), or
    None when no profile has two seeds at that length.

    A profile within this of the best cannot be told from the best with one training seed:
    the noise floor of a ranking of single-seed trials.
    """
    by: dict[tuple[tuple[tuple[int, ...], ...], int], dict[int, float]] = {}
    for r in as_records(records):
        if r.finished(metric_name) and r.max_steps == steps:
            by.setdefault((r.arch_key, r.base_width), {}).setdefault(r.seed, r.metric(metric_name))
    groups = [list(v.values()) for v in by.values() if len(v) >= 2]
    dof = sum(len(g) - 1 for g in groups)
    if not dof:
        return None
    pooled = sum((len(g) - 1) * statistics.variance(g) for g in groups) / dof
    return (pooled**0.5) / statistics.fmean(x for g in groups for x in g), len(groups)
