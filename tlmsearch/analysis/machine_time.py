"""What a run, a study or a ladder has cost so far in machine time, from its records (pure but
for `folder_time`, which reads them).

Every record that trained carries its wall time (`wall_s`, from its start to its end as the
driver saw it, evaluations and the model's build included) and the resources it held
(`resources`: Ray's {"CPU": n, "GPU": g}; empty in records written before a search recorded
them, counted as one CPU). The members of a pack share one process, so they carry the pack's
start, end and wall time: a pack counts once. A run interrupted and resumed counts the session
that finished it (the record's own times).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlmsearch.core.words import plural
from tlmsearch.rundir.records import as_records, read_records

HOUR = 3600.0


@dataclass(frozen=True)
class MachineTime:
    """Runs that trained (every member of a pack), their wall time summed (a pack's once), and
    that time times the CPUs and GPUs each held: CPU-seconds and GPU-seconds."""

    runs: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    gpu_s: float = 0.0

    def __add__(self, other: MachineTime) -> MachineTime:
        return MachineTime(
            self.runs + other.runs, self.wall_s + other.wall_s, self.cpu_s + other.cpu_s, self.gpu_s + other.gpu_s
        )

    def text(self) -> str:
        """E.g. '136 runs, 0.80 h of run time summed over runs (0.80 CPU-hours)'."""
        if not self.runs:
            return "no run has trained yet"
        held = f"{self.cpu_s / HOUR:.2f} CPU-hours" + (f", {self.gpu_s / HOUR:.2f} GPU-hours" if self.gpu_s else "")
        return f"{plural(self.runs, 'run')}, {self.wall_s / HOUR:.2f} h of run time summed over runs ({held})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "wall_s": round(self.wall_s, 3),
            "cpu_s": round(self.cpu_s, 3),
            "gpu_s": round(self.gpu_s, 3),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MachineTime:
        return cls(int(d["runs"]), float(d["wall_s"]), float(d["cpu_s"]), float(d["gpu_s"]))


def machine_time(records: Iterable[Any]) -> MachineTime:
    """The machine time of `records` (TrialRecords or their dicts); records without a wall time
    (never started, or written before it was recorded) count nothing."""
    seen: set[tuple[Any, ...]] = set()
    out = MachineTime()
    for r in as_records(records):
        wall = float(r.wall_s or 0.0)
        if not wall > 0:
            continue
        held = dict(r.resources or {})
        cpus, gpus = float(held.get("CPU", 1.0) or 0.0), float(held.get("GPU", 0.0) or 0.0)
        key = (r.started_at, r.ended_at, wall, cpus, gpus)
        if r.started_at and r.ended_at and key in seen:  # another member of a pack: its time is counted
            out = out + MachineTime(runs=1)
            continue
        seen.add(key)
        out = out + MachineTime(1, wall, wall * cpus, wall * gpus)
    return out


def machine_text(d: Mapping[str, Any]) -> str:
    """`MachineTime.text` of a `to_dict` (what `--json` prints)."""
    return MachineTime.from_dict(d).text()


def run_times(folder: str | Path) -> dict[Path, MachineTime]:
    """The machine time of each run directory under `folder` (each trials.jsonl below it: a run
    directory, a study's architectures and controls, a ladder's points), by its path relative to
    `folder`. Unreadable lines or files count nothing."""
    out: dict[Path, MachineTime] = {}
    for path in sorted(Path(folder).rglob("trials.jsonl")):
        try:
            records = read_records(path.parent) if path.is_file() else []
        except (OSError, ValueError):  # unreadable or damaged past reading: `status` names the damage
            records = []
        out[path.parent.relative_to(folder)] = machine_time(records)
    return out


def folder_time(folder: str | Path) -> MachineTime:
    """The machine time of every run under `folder` (`run_times` summed)."""
    return sum(run_times(folder).values(), MachineTime())


__all__ = ["MachineTime", "folder_time", "machine_text", "machine_time", "run_times"]
