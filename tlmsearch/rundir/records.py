"""Trial records: one JSON line per ended trial in `runs/<name>/trials.jsonl`.

The driver appends a record as each trial ends (flushed at once), so a crash never loses a
finished trial; the file is never rewritten. `trial_id` is unique within a run directory and
`RecordLog.append` skips ids already present, so a resumed search never writes a trial twice;
a file that holds an id twice anyway (copied lines) is read with each id once (the first line).

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

from tlmsearch.configs.identity import shape_key
from tlmsearch.core.base import Config, ModelConfig, check_choice
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.io import cut_torn_tail, read_jsonl_checked
from tlmsearch.rundir.layout import TRIALS

KINDS: tuple[str, ...] = ("baseline", "sampled", "verify", "compare", "noise", "lr", "ratecheck")
SEARCH_KINDS: tuple[str, ...] = ("baseline", "sampled")  # the search's own trials
EVAL_KINDS: tuple[str, ...] = ("verify", "compare")  # seed-paired re-evaluations
NOISE_KIND = "noise"  # the search's extra seeds of uniform (its noise floor), never shown to the sampler
LR_KIND = "lr"  # the search's learning-rate calibration: uniform at each rate of a grid, before everything
RATE_KIND = "ratecheck"  # verify's rate check: cosine and the best candidate at half and twice the rate
STATUSES: tuple[str, ...] = ("complete", "stopped", "failed")

# The run-directory layout this tlmsearch reads and writes, marked in every trial record (every
# reader of a run, a study's or a ladder's runs included, reads its records). A record without
# the mark is layout 1. Raise it when a record, a run file or an option changes form, and say
# in LAYOUT_WRITERS which tlmsearch wrote the layouts before; older layouts are not read.
RUN_LAYOUT = 2
LAYOUT_WRITERS: dict[int, str] = {1: "tlmsearch 0.1.0 up to its per-architecture options"}


class LayoutError(UserError):
    """A run directory written in another layout than `RUN_LAYOUT` (one line saying what to do)."""


def check_layout(data: Any, where: str | Path) -> None:
    """Refuse a record of another layout than `RUN_LAYOUT` (a plain dict as read from `where`)."""
    found = data.get("layout", 1)
    if found == RUN_LAYOUT:
        return
    if isinstance(found, int) and not isinstance(found, bool) and found < RUN_LAYOUT:
        writer = LAYOUT_WRITERS.get(found, "an older tlmsearch")
        raise LayoutError(
            f"{where}: a run directory of layout {found}, written by {writer}; this tlmsearch reads layout "
            f"{RUN_LAYOUT}: open it with that tlmsearch, or start a new run"
        )
    raise LayoutError(
        f"{where}: a run directory of layout {found!r}, not one this tlmsearch wrote (it reads layout {RUN_LAYOUT}); "
        "open it with the tlmsearch that wrote it, or start a new run"
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrialRecord(Config):
    """Everything known about one ended trial (the contract with the analysis code)."""

    trial_id: str
    number: int = -1  # Optuna trial number, -1 when the trial has none
    kind: str = "sampled"  # "baseline" | "sampled" | "verify" | "compare" | "noise" | "lr" | "ratecheck"
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
    # what the worker trained, exactly (ModelConfig / TrainConfig / DataConfig dicts); {} for a
    # trial that never trained
    model: dict[str, Any] = dataclasses.field(default_factory=dict)
    train: dict[str, Any] = dataclasses.field(default_factory=dict)
    data: dict[str, Any] = dataclasses.field(default_factory=dict)
    # where it ran: the Ray node id, the devices it was given ("cpu", "GPU 0 (name)", ...), the
    # resources Ray reserved for it ({"CPU": 1.0, "GPU": 0.25}: a GPU fraction is shared) and
    # how many times Ray restarted it after a worker failure (Tune's retries of the trial and Ray
    # Train's restarts of its workers, the latter as its last session counted them); a trial of several data-parallel
    # workers (`workers`) has worker 0's node, and the devices and resources of all of them
    node: str | None = None
    devices: tuple[str, ...] = ()
    resources: dict[str, float] = dataclasses.field(default_factory=dict)
    retries: int = 0
    layout: int = RUN_LAYOUT  # the run-directory layout that wrote the record (`check_layout`)

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, KINDS)
        check_choice("status", self.status, STATUSES)

    @property
    def workers(self) -> int:
        """The data-parallel workers that trained it: `metrics["workers"]`, which a trial of
        several carries (1 without it: the records of one worker keep the layout they had)."""
        return int(self.metrics.get("workers", 1))

    @property
    def spec(self) -> ProfileSpec:
        """The trained profile as a `ProfileSpec`."""
        return ProfileSpec.from_dict(self.profile)

    @property
    def model_config(self) -> ModelConfig | None:
        """The exact model the worker trained (None for a trial that never trained)."""
        return ModelConfig.from_dict(self.model) if self.model else None

    @property
    def base_width(self) -> int:
        return int(self.budget.get("base_width", 0))

    @property
    def arch_key(self) -> tuple[tuple[int, ...], ...]:
        """What makes two records the same architecture of a budget: the MLP widths, and the
        per-layer query heads, key/value heads and block widths of a joint profile (() where the
        model keeps the preset's), so joint architectures with one MLP shape stay apart: the one
        identity of a built model (`configs.identity.shape_key`)."""
        return shape_key({**self.model, "mlp_widths": self.widths})

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
    crash, garbled, or a JSON object that is not a valid record). A trial id given again
    counts once (`duplicate_ids`)."""
    records, bad, _ = _read_checked(run_dir)
    return records, bad


def duplicate_ids(run_dir: str | Path) -> list[str]:
    """The trial ids `trials.jsonl` holds on more than one line (each once, in file order)."""
    return _read_checked(run_dir)[2]


def _read_checked(run_dir: str | Path) -> tuple[list[TrialRecord], list[int], list[str]]:
    """Records, damaged line numbers, and the ids that repeat.

    Records are keyed by trial id, and the driver never writes an id twice (`RecordLog`), so a
    repeated id is a copy added by hand or by merging files: the first line of an id is kept,
    the one the driver wrote when the trial ended (its place is the order trials ended in), and
    every later one is skipped. Counting it twice would make a resume believe trials ran that
    never did (a search "2/2 ended" with one trial twice) and weigh that trial twice in every
    statistic.
    """
    path = Path(run_dir) / TRIALS
    rows, bad = read_jsonl_checked(path)
    out: list[TrialRecord] = []
    seen: set[str] = set()
    repeated: dict[str, None] = {}
    for data in rows:
        try:
            record = TrialRecord.from_dict(data)
        except (ConfigError, TypeError, ValueError):
            bad.append(-1)
            continue
        # every record carries its layout (a file appended to by an older tlmsearch is refused too)
        check_layout(data, path.parent)
        if record.trial_id in seen:
            repeated[record.trial_id] = None
            continue
        seen.add(record.trial_id)
        out.append(record)
    return out, bad, list(repeated)


def duplicate_note(run_dir: str | Path, ids: list[str] | None = None) -> str | None:
    """One line saying which trial ids `trials.jsonl` repeats (each counted once), or None;
    `ids`: the repeated ids when the caller has read them already (`_read_checked`)."""
    if ids is None:
        try:
            ids = duplicate_ids(run_dir)
        except (ConfigError, OSError):
            return None
    if not ids:
        return None
    shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
    return (
        f"warning: {Path(run_dir) / TRIALS}: {len(ids)} trial id(s) appear on more than one line ({shown}); "
        "each trial is counted once (its first line)"
    )


_DUPLICATES_WARNED: set[Path] = set()


def _warn_duplicates_once(run_dir: str | Path, ids: list[str]) -> None:
    """Print `duplicate_note` on stderr, once per run directory in this process."""
    key = Path(run_dir).resolve()
    note = duplicate_note(run_dir, ids)
    if note and key not in _DUPLICATES_WARNED:
        _DUPLICATES_WARNED.add(key)
        print(note, file=sys.stderr)


def damage_note(run_dir: str | Path) -> str | None:
    """One line saying how many lines of `trials.jsonl` were skipped as damaged and which trial
    ids it repeats, or None (the file read once)."""
    path = Path(run_dir) / TRIALS
    if (path.exists() or path.is_symlink()) and not path.is_file():  # a folder, a FIFO, a link loop
        return f"warning: {path} is not a file; no trial is counted here"
    _, bad, repeated = _read_checked(run_dir)
    duplicates = duplicate_note(run_dir, repeated)
    if not bad:
        return duplicates
    where = [str(n) for n in bad if n > 0]
    at = f" (line {', '.join(where[:5])}{', ...' if len(where) > 5 else ''})" if where else ""
    note = (
        f"warning: {Path(run_dir) / TRIALS}: skipped {len(bad)} damaged line(s){at}; those trials are not counted here"
    )
    return f"{note}; {duplicates.removeprefix('warning: ')}" if duplicates else note


def check_records(run_dir: str | Path) -> None:
    """Refuse, in one line naming the file, a `trials.jsonl` a search cannot continue from: not
    a file, or holding damaged lines (the last line torn by a crash is not damage: `RecordLog`
    cuts it). Continuing would run again the trials those lines held and append to a file
    whose earlier trials no reader can count."""
    path = Path(run_dir) / TRIALS
    if not path.exists() and not path.is_symlink():
        return
    if not path.is_file():
        raise ConfigError(f"{path} is not a file; a search's records are a JSON-lines file")
    _, bad = read_records_checked(run_dir)
    if bad:
        where = [str(n) for n in bad if n > 0]
        at = f"line {', '.join(where[:5])}{', ...' if len(where) > 5 else ''}" if where else "a record"
        raise ConfigError(
            f"{path}: {len(bad)} damaged line(s) ({at}) hold no trial record; put back a good copy of the "
            "file, or remove those lines to run their trials again, and resume"
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
        records, _, repeated = _read_checked(run_dir)
        self.seen: set[str] = {r.trial_id for r in records}
        _warn_duplicates_once(run_dir, repeated)  # a search, resume or verify appending here says so once

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
