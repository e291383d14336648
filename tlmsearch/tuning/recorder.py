"""Driver-side Tune callback that appends a `TrialRecord` as each trial ends."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

from ray.tune import Callback

from tlmsearch.analysis.plan import device_kind
from tlmsearch.configs.resolve import budget_for
from tlmsearch.configs.search import SearchConfig
from tlmsearch.costs.rates import rate_shape, record_rate, run_rate
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec, shape_stats
from tlmsearch.rundir.records import RecordLog, TrialRecord, read_records
from tlmsearch.tuning.checkpoints import SPACE_ERROR, drop_trial_checkpoints, sampled_params
from tlmsearch.tuning.searcher import mark_pruned

_STATIC_KEYS = ("params_total", "params_non_embedding", "params_mlp")


def trial_config(config: dict[str, Any]) -> dict[str, Any]:
    """A trial's own config (`run_fixed` nests it under "item" of a grid search)."""
    return dict(config["item"]) if "item" in config else dict(config)


def _iso(t: float | None) -> str | None:
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat(timespec="milliseconds") if t else None


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
    """The record of one ended trial from its Tune config and its last reported result.

    The model, widths and budget are the ones the worker reported it trained (`trained`);
    only a trial that failed before it resolved its model has them derived here.
    """
    result = result or {}
    ended = ended or time.time()
    space_error = config.get(SPACE_ERROR)
    try:
        spec: ProfileSpec | None = ProfileSpec.parse(str(config.get("profile", "")))
    except ConfigError as exc:  # no profile (the space failed to sample one): the trial failed on it too
        spec, error = None, error or str(space_error or exc)
    if space_error:  # what the trial trained is no profile: the space's error is the reason
        error = str(space_error)
    trained = dict(result.get("trained") or {})
    model = dict(trained.get("model") or {})
    widths: tuple[int, ...] = ()
    if model:
        budget = dict(trained["budget"])
        widths = tuple(int(w) for w in model["mlp_widths"])
    else:
        budget = budget_for(cfg, config.get("base_width")).to_dict()
        try:
            widths = spec.widths(budget_for(cfg, config.get("base_width"))) if spec else ()
        except ValueError:  # a profile the budget cannot hold: the trial failed on it too
            widths = ()
    shape = shape_stats(widths).to_dict() if widths else {}
    curve = [dict(c) for c in result.get("curve") or []]
    steps = int(result.get("step", 0) or 0)
    max_steps = cfg.train.steps
    if error or result.get("failed"):
        status, reason = "failed", error or str(result.get("reason"))
    elif steps >= max_steps:
        status, reason = "complete", None
    else:
        status, reason = "stopped", f"stopped early at step {steps} of {max_steps}"
    metrics = dict(curve[-1]) if curve else {}
    metrics.update({k: float(result[k]) for k in _STATIC_KEYS if k in result})
    if started is None and "time_total_s" in result:
        started = ended - float(result["time_total_s"])
    kind = config.get("kind") or ("baseline" if config.get("baseline") else "sampled")
    return TrialRecord(
        trial_id=trial_id,
        number=int(config.get("number", -1)),
        kind=kind,
        baseline=config.get("baseline"),
        status=status,
        reason=reason,
        params=sampled_params(config),
        profile=spec.to_dict() if spec else {},
        widths=widths,
        budget=budget,
        shape=shape,
        seed=int(config.get("seed", cfg.seed)),
        steps=steps,
        max_steps=max_steps,
        full_fidelity=status == "complete" and steps == max_steps,
        curve=tuple(curve),
        metrics=metrics,
        started_at=_iso(started),
        ended_at=_iso(ended),
        wall_s=round(ended - started, 3) if started else 0.0,
        model=model,
        train=dict(trained.get("train") or {}),
        data=dict(trained.get("data") or {}),
        node=str(result["node"]) if result.get("node") else None,
        devices=tuple(str(d) for d in result.get("devices") or ()),
        resources={str(k): float(v) for k, v in (result.get("resources") or {}).items()},
        retries=int(retries),
    )


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
        record = build_record(
            self.cfg,
            trial.trial_id,
            config,
            dict(trial.last_result or {}),
            error=error,
            started=self._started.pop(trial.trial_id, None),
            retries=_retries(trial),
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
    records without their model, and restarted trials (their wall time mixes sessions) add nothing."""
    if record.status == "failed" or not record.model or not record.train or record.retries:
        return False
    measured = run_rate(record.metrics, record.steps, record.wall_s)
    if measured is None:
        return False
    shape = rate_shape(record.model, record.train, device_kind(record.devices))
    return record_rate(cache_dir, shape, measured[0], measured[1], f"trial {record.kind}")
