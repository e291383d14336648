"""Trial records: one JSON line per ended trial in `runs/<name>/trials.jsonl`.

The driver appends a record as each trial ends (flushed at once), so a crash never loses a
finished trial; the file is never rewritten. `trial_id` is unique within a run directory and
`RecordLog.append` skips ids already present, so a resumed search never writes a trial twice.

Everything above this module reads records through `TrialRecord` attributes; this module holds
the one definition of a finished trial (`TrialRecord.finished`, `finished`) and the one metric
getter (`TrialRecord.metric`). `as_records` accepts plain dicts too (as read from a file).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tlmsearch.config import Config, ModelConfig, check_choice
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.io import cut_torn_tail, read_jsonl_checked
from tlmsearch.rundir.layout import TRIALS

KINDS: tuple[str, ...] = ("baseline", "sampled", "verify", "compare", "noise")
SEARCH_KINDS: tuple[str, ...] = ("baseline", "sampled")  # the search's own trials
EVAL_KINDS: tuple[str, ...] = ("verify", "compare")  # seed-paired re-evaluations
NOISE_KIND = "noise"  # the search's extra seeds of uniform (its noise floor), never shown to the sampler
STATUSES: tuple[str, ...] = ("complete", "stopped", "failed")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrialRecord(Config):
    """Everything known about one ended trial (the contract with the analysis code)."""

    trial_id: str
    number: int = -1  # Optuna trial number, -1 when the trial has none
    kind: str = "sampled"  # "baseline" | "sampled" | "verify" | "compare" | "noise"
    baseline: str | None = None  # baseline name (the profile's canonical text) or None
    status: str = "complete"  # "complete" | "stopped" | "failed"
    reason: str | None = None  # why a trial stopped or failed
    params: dict[str, Any] = dataclasses.field(default_factory=dict)  # sampled Optuna params
    profile: dict[str, Any] = dataclasses.field(default_factory=dict)  # ProfileSpec.to_dict()
    widths: tuple[int, ...] = ()
    budget: dict[str, Any] = dataclasses.field(default_factory=dict)  # Budget.to_dict()
    shape: dict[str, Any] = dataclasses.field(default_factory=dict)  # ShapeStats.to_dict()
    seed: int = 0
    steps: int = 0  # optimizer steps reached
    max_steps: int = 0
    full_fidelity: bool = False  # steps == max_steps and status == "complete"
    curve: tuple[dict[str, Any], ...] = ()  # one metric dict per evaluation
    metrics: dict[str, Any] = dataclasses.field(default_factory=dict)  # final metrics
    started_at: str | None = None  # ISO times
    ended_at: str | None = None
    wall_s: float = 0.0
    # what the worker trained, exactly (ModelConfig / TrainConfig / DataConfig dicts);
    # {} in records written before the worker returned them
    model: dict[str, Any] = dataclasses.field(default_factory=dict)
    train: dict[str, Any] = dataclasses.field(default_factory=dict)
    data: dict[str, Any] = dataclasses.field(default_factory=dict)
    # where it ran: the Ray node id, the devices it was given ("cpu", "GPU 0 (name)", ...) and
    # how many times Ray restarted it after a worker failure (None/()/0 in older records)
    node: str | None = None
    devices: tuple[str, ...] = ()
    retries: int = 0

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, KINDS)
        check_choice("status", self.status, STATUSES)

    @property
    def spec(self) -> ProfileSpec:
        """The trained profile as a `ProfileSpec`."""
        return ProfileSpec.from_dict(self.profile)

    @property
    def model_config(self) -> ModelConfig | None:
        """The exact model the worker trained (None for a record written before records held it)."""
        return ModelConfig.from_dict(self.model) if self.model else None

    @property
    def base_width(self) -> int:
        return int(self.budget.get("base_width", 0))

    @property
    def budget_key(self) -> tuple[int, int]:
        """(n_layers, base width): the budget a record was trained under."""
        return int(self.budget.get("n_layers", len(self.widths))), self.base_width

    def metric(self, name: str = "val_loss") -> float:
        """The final value of metric `name` (nan when missing; val_ppl from val_loss if needed)."""
        value = self.metrics.get(name)
        if value is None and name == "val_ppl" and self.metrics.get("val_loss") is not None:
            value = math.exp(self.metrics["val_loss"])
        return float(value) if isinstance(value, int | float) else math.nan

    def finished(self, metric_name: str = "val_loss") -> bool:
        """Complete, at full fidelity, with a finite `metric_name`.

        Trials stopped early (ASHA) report partial values and never enter fronts or rankings.
        """
        return self.status == "complete" and self.full_fidelity and math.isfinite(self.metric(metric_name))


def as_record(record: TrialRecord | dict[str, Any]) -> TrialRecord:
    """A `TrialRecord` from a record or its plain dict (the one place dicts become records)."""
    return record if isinstance(record, TrialRecord) else TrialRecord.from_dict(record)


def as_records(source: Any) -> list[TrialRecord]:
    """The records of a `Study` (anything with `.records`) or of an iterable of records/dicts."""
    records = source.records if hasattr(source, "records") else source
    return [as_record(r) for r in records]


def finished(
    records: Iterable[TrialRecord | dict[str, Any]],
    kinds: Sequence[str] = SEARCH_KINDS,
    metric_name: str = "val_loss",
) -> list[TrialRecord]:
    """The finished records (`TrialRecord.finished`) of the given kinds, in order."""
    return [r for r in as_records(records) if r.kind in kinds and r.finished(metric_name)]


def read_records(run_dir: str | Path) -> list[TrialRecord]:
    """All records of a run directory, in the order they ended (damaged lines are skipped:
    `damaged_lines` says which)."""
    return read_records_checked(run_dir)[0]


# read_records_polled: path -> ((inode, size, mtime), records)
_POLLED: dict[Path, tuple[tuple[int, int, int], list[TrialRecord]]] = {}
_POLLED_LOCK = threading.Lock()


def read_records_polled(run_dir: str | Path) -> list[TrialRecord]:
    """`read_records` for views that poll a running run every second or so: the file is parsed
    again only when it changed (inode, size or modification time), so a live line does not
    re-read hundreds of records a second. A file that changes while it is read is parsed again
    at the next call (its new time no longer matches)."""
    path = Path(run_dir) / TRIALS
    try:
        st = path.stat()
    except OSError:
        return read_records(run_dir)
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    with _POLLED_LOCK:
        hit = _POLLED.get(path)
    if hit is not None and hit[0] == key:
        return list(hit[1])
    records = read_records(run_dir)
    with _POLLED_LOCK:
        _POLLED[path] = (key, records)
    return list(records)


def read_records_checked(run_dir: str | Path) -> tuple[list[TrialRecord], list[int]]:
    """The records of a run directory and the numbers of the lines that hold none (torn by a
    crash, garbled, or a JSON object that is not a valid record)."""
    rows, bad = read_jsonl_checked(Path(run_dir) / TRIALS)
    out = []
    for data in rows:
        try:
            out.append(TrialRecord.from_dict(data))
        except (ConfigError, TypeError, ValueError):
            bad.append(-1)
    return out, bad


def damage_note(run_dir: str | Path) -> str | None:
    """One line saying how many lines of `trials.jsonl` were skipped as damaged, or None."""
    _, bad = read_records_checked(run_dir)
    if not bad:
        return None
    where = [str(n) for n in bad if n > 0]
    at = f" (line {', '.join(where[:5])}{', ...' if len(where) > 5 else ''})" if where else ""
    return (
        f"warning: {Path(run_dir) / TRIALS}: skipped {len(bad)} damaged line(s){at}; those trials are not counted here"
    )


class RecordLog:
    """Append-only `trials.jsonl` writer that never writes the same trial id twice."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / TRIALS
        self.path.parent.mkdir(parents=True, exist_ok=True)
        cut = cut_torn_tail(self.path)  # a line torn by a crash: the next one starts cleanly
        if cut:
            print(
                f"warning: {self.path}: removed a last line cut short by a crash ({cut} bytes, kept in "
                f"{self.path.name}.torn); that trial is recovered from Tune's state or run again",
                file=sys.stderr,
            )
        self.seen: set[str] = {r.trial_id for r in read_records(run_dir)}

    def append(self, record: TrialRecord) -> bool:
        """Write `record` unless its trial id is already there; True when written."""
        if record.trial_id in self.seen:
            return False
        line = json.dumps(record.to_dict(), allow_nan=True) + "\n"
        with self.path.open("a") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self.seen.add(record.trial_id)
        return True
