"""Trial records: one JSON line per ended trial in `runs/<name>/trials.jsonl`.

The driver appends a record as each trial ends (flushed at once), so a crash never loses a
finished trial; the file is never rewritten. `trial_id` is unique within a run directory and
`RecordLog.append` skips ids already present, so a resumed search never writes a trial twice.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from tlmsearch.config import Config, check_choice

KINDS: tuple[str, ...] = ("baseline", "sampled", "verify", "compare")
STATUSES: tuple[str, ...] = ("complete", "stopped", "failed")
TRIALS_FILE = "trials.jsonl"


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrialRecord(Config):
    """Everything known about one ended trial (the contract with the analysis code)."""

    trial_id: str
    number: int = -1  # Optuna trial number, -1 when the trial has none
    kind: str = "sampled"  # "baseline" | "sampled" | "verify" | "compare"
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

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, KINDS)
        check_choice("status", self.status, STATUSES)

    @property
    def spec(self) -> Any:
        """The trained profile as a `ProfileSpec`."""
        from tlmsearch.profiles import ProfileSpec

        return ProfileSpec.from_dict(self.profile)


def read_records(run_dir: str | Path) -> list[TrialRecord]:
    """All records of a run directory, in the order they ended (a torn last line is skipped)."""
    path = Path(run_dir) / TRIALS_FILE
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a crash mid-write
            continue
        records.append(TrialRecord.from_dict(data))
    return records


class RecordLog:
    """Append-only `trials.jsonl` writer that never writes the same trial id twice."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / TRIALS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.seen: set[str] = {r.trial_id for r in read_records(run_dir)}
        if self.path.exists() and self.path.stat().st_size:
            with self.path.open("rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":  # a line torn by a crash: start the next one cleanly
                    with self.path.open("a") as g:
                        g.write("\n")

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
