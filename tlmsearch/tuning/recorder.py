"""Driver-side Tune callback that appends a `TrialRecord` as each trial ends: `record_of(spec,
outcome)`, the `TrialSpec` its Tune config carries and the `TrialOutcome` of its worker's last
report (empty, failed with Ray's error, for a trial that died before reporting).
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

from ray.tune import Callback

from tlmsearch.analysis.plan import device_kind
from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.trial import OUTCOME, SPEC, TRAIN_RESTARTS, TrialOutcome, TrialSpec
from tlmsearch.costs.rates import rate_shape, record_rate, run_rate
from tlmsearch.profiles import ProfileSpec, shape_stats
from tlmsearch.rundir.records import RecordLog, TrialRecord, read_records
from tlmsearch.tuning.checkpoints import drop_trial_checkpoints
from tlmsearch.tuning.searcher import mark_pruned
from tlmsearch.tuning.specs import spec_of


def trial_config(config: dict[str, Any]) -> dict[str, Any]:
    """A trial's own config (`run_fixed` nests it under "item" of a grid search)."""
    return dict(config["item"]) if "item" in config else dict(config)


def _iso(t: float | None) -> str | None:
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat(timespec="milliseconds") if t else None


def outcome_of(result: dict[str, Any] | None) -> TrialOutcome:
    """The typed outcome a worker's report carries; without one (Ray ended the trial before its
    first report) an empty one: stopped at step 0, or failed with Ray's error (`record_of`)."""
    data = (result or {}).get(OUTCOME)
    return TrialOutcome.from_dict(data) if data else TrialOutcome()


def record_of(
    spec: TrialSpec,
    outcome: TrialOutcome,
    *,
    trial_id: str,
    started: float | None = None,
    ended: float | None = None,
    retries: int = 0,
    error: str | None = None,
) -> TrialRecord:
    """The record of one ended trial: its spec and its outcome; `error` is Ray's (a trial that
    errored in Ray, not in training). A spec that could not train gives its own reason."""
    ended = ended or time.time()
    max_steps = spec.train.steps
    if spec.error or error or outcome.status == "failed":
        status, reason = "failed", spec.error or error or str(outcome.reason)
    elif outcome.steps >= max_steps:
        status, reason = "complete", None
    else:
        status, reason = "stopped", f"stopped early at step {outcome.steps} of {max_steps}"
    try:
        profile = ProfileSpec.parse(spec.profile).to_dict() if spec.profile else {}
    except ValueError:  # a profile text that no longer parses (a family since removed)
        profile = {}
    widths = spec.widths
    return TrialRecord(
        trial_id=trial_id,
        number=spec.number,
        kind=spec.kind,
        baseline=spec.baseline,
        status=status,
        reason=reason,
        params=dict(spec.params),
        profile=profile,
        widths=widths,
        budget=spec.budget.to_dict(),
        shape=shape_stats(widths).to_dict() if widths else {},
        seed=spec.seed,
        steps=outcome.steps,
        max_steps=max_steps,
        full_fidelity=status == "complete" and outcome.steps == max_steps,
        curve=tuple(dict(c) for c in outcome.curve),
        metrics=dict(outcome.metrics),
        started_at=_iso(started),
        ended_at=_iso(ended),
        wall_s=round(ended - started, 3) if started else 0.0,
        model=spec.model.to_dict() if spec.model is not None else {},
        train=spec.train.to_dict(),
        data=spec.data.to_dict(),
        node=outcome.node,
        devices=outcome.devices,
        resources=dict(outcome.resources),
        retries=int(retries),
    )


def started_at(result: dict[str, Any] | None, started: float | None, ended: float) -> float | None:
    """When a trial started: as this driver saw it, else from Tune's `time_total_s`."""
    if started is None and result and "time_total_s" in result:
        return ended - float(result["time_total_s"])
    return started


def _error_reason(trial: Any) -> str:
    try:
        err = trial.get_error()
    except Exception:  # noqa: BLE001 - the error file may be unreadable
        err = None
    text = str(err or "").strip().splitlines()
    return text[-1] if text else "the trial's worker failed"


def _retries(trial: Any) -> int:
    """How many times Ray restarted the trial after its worker failed (`max_failures`)."""
    try:
        return int(trial.run_metadata.num_failures)
    except (AttributeError, TypeError, ValueError):
        return 0


class RecordWriter(Callback):
    """Appends a record to `<run_dir>/trials.jsonl` when a trial completes or errors, then drops
    that trial's checkpoints unless `cfg.keep_checkpoints` (`tuning.checkpoints`).

    Deduplicated by trial id against the file itself. Keeps running counts for the progress view.
    """

    def __init__(self, run_dir: str | Path, cfg: SearchConfig) -> None:
        self.run_dir = str(Path(run_dir).resolve())
        self.cfg = cfg
        self.written: list[TrialRecord] = []  # records written by this driver session
        self.configs: dict[str, dict[str, Any]] = {}  # their Tune configs, by trial id
        self._log: RecordLog | None = None
        self._started: dict[str, float] = {}

    @property
    def log(self) -> RecordLog:
        if self._log is None:
            self._log = RecordLog(self.run_dir)
        return self._log

    def all_records(self) -> list[TrialRecord]:
        return read_records(self.run_dir)

    def setup(self, **info: Any) -> None:  # type: ignore[override]
        self._log = RecordLog(self.run_dir)  # re-read ids: the file may have grown since
        self._setup_at = time.time()

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._started[trial.trial_id] = time.time()

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._write(trial, None)

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._write(trial, _error_reason(trial))

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        """Tune ends trials cut by the time budget without `on_trial_complete`: record them here.
        After a Ctrl-C the unfinished trials stay unrecorded (`resume` continues them)."""
        budget = self.cfg.time_budget_s
        if budget and time.time() - getattr(self, "_setup_at", time.time()) >= 0.95 * budget:
            ran = [t for t in trials if t.trial_id in self._started or "step" in (t.last_result or {})]
            cut = [t for t in ran if t.trial_id not in self.log.seen]
            for trial in cut:
                self._write(trial, None, reason=f"time budget of {budget:g} s reached")
            numbers = [int(trial_config(t.config).get("number", -1)) for t in cut]
            if any(n >= 0 for n in numbers):
                mark_pruned(self.run_dir, [n for n in numbers if n >= 0])
        if not self.cfg.keep_checkpoints:  # a stopped worker may have saved once more after its record
            drop_trial_checkpoints(trials, self.log.seen)

    def _write(self, trial: Any, error: str | None, reason: str | None = None) -> None:
        config = trial_config(trial.config)
        spec = TrialSpec.from_dict(config[SPEC]) if SPEC in config else spec_of(self.cfg, config)
        result = dict(trial.last_result or {})
        ended = time.time()
        record = record_of(
            spec,
            outcome_of(result),
            trial_id=trial.trial_id,
            started=started_at(result, self._started.pop(trial.trial_id, None), ended),
            ended=ended,
            retries=_retries(trial) + int(result.get(TRAIN_RESTARTS, 0)),  # Tune's and Ray Train's
            error=error,
        )
        if reason and record.status == "stopped":
            record = record.replace(reason=f"{reason} at step {record.steps} of {record.max_steps}")
        if self.log.append(record):
            self.written.append(record)
            self.configs[record.trial_id] = config
            remember_rate(record, self.cfg.data.cache_path())
        if not self.cfg.keep_checkpoints and record.trial_id in self.log.seen:  # nothing reads them again
            drop_trial_checkpoints([trial], self.log.seen)


def remember_rate(record: TrialRecord, cache_dir: Path) -> bool:
    """Add an ended trial's seconds per step to the rate cache (`tlmsearch.costs.rates`); failed trials,
    records without their model, restarted trials (their wall time mixes sessions) and trials of several
    data-parallel workers (the cache holds one device's rates) add nothing."""
    if record.status == "failed" or not record.model or not record.train or record.retries or record.workers > 1:
        return False
    measured = run_rate(record.metrics, record.steps, record.wall_s)
    if measured is None:
        return False
    shape = rate_shape(record.model, record.train, device_kind(record.devices))
    return record_rate(cache_dir, shape, measured[0], measured[1], f"trial {record.kind}")
