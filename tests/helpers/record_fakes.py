"""Trial records made without training: a Tune config and a flat result, as a worker reported
before results carried a `TrialOutcome`, turned into a `TrialRecord` (`build_record`)."""

from __future__ import annotations

import time
from typing import Any

from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.trial import OUTCOME, SPEC, TrialOutcome, TrialSpec, trial_spec
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.recorder import outcome_of, record_of, started_at

_STATIC_KEYS = ("params_total", "params_non_embedding", "params_mlp")


def build_record(
    cfg: SearchConfig,
    trial_id: str,
    config: dict[str, Any],
    result: dict[str, Any] | None,
    *,
    error: str | None = None,
    started: float | None = None,
    ended: float | None = None,
    retries: int = 0,
) -> TrialRecord:
    """A record from a Tune config and a flat result (`step`, `curve`, `failed`, `reason`,
    placement, counts, and optionally `trained`: the model, train, data and budget dicts that
    replace the spec's). The spec is the config's own, or resolved here with the preset's
    vocabulary."""
    result = dict(result or {})
    spec = TrialSpec.from_dict(config[SPEC]) if SPEC in config else trial_spec(cfg, config)
    trained = dict(result.get("trained") or {})
    if trained.get("model"):
        spec = spec.replace(
            model=spec.model.from_dict(trained["model"]) if spec.model else None,
            train=spec.train.from_dict(trained.get("train") or spec.train.to_dict()),
            data=spec.data.from_dict(trained.get("data") or spec.data.to_dict()),
            budget=spec.budget.from_dict(trained.get("budget") or spec.budget.to_dict()),
        )
    if OUTCOME in result:
        outcome = outcome_of(result)
    else:
        curve = tuple(dict(c) for c in result.get("curve") or ())
        metrics = dict(curve[-1]) if curve else {}
        metrics.update({k: float(result[k]) for k in _STATIC_KEYS if k in result})
        outcome = TrialOutcome(
            status="failed" if result.get("failed") else "running",
            reason=str(result.get("reason")) if result.get("failed") else None,
            steps=int(result.get("step", 0) or 0),
            curve=curve,
            metrics=metrics,
            node=str(result["node"]) if result.get("node") else None,
            devices=tuple(str(d) for d in result.get("devices") or ()),
            resources={str(k): float(v) for k, v in (result.get("resources") or {}).items()},
        )
    ended = ended or time.time()
    started = started_at(result, started, ended)
    return record_of(spec, outcome, trial_id=trial_id, started=started, ended=ended, retries=retries, error=error)
