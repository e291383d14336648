"""`Study`: a search run directory read back — records, a DataFrame, best trials, Pareto front.

Plain data over the run directory: re-evaluation, reports and exports are functions of the
layers above that take a `Study` (`tlmsearch.api.Study` adds them back as methods).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tlmsearch.configs.lr_choice import LrCalibration
from tlmsearch.configs.search import OBJECTIVE_METRICS, OBJECTIVES, SearchConfig, load_run_config
from tlmsearch.core.base import ModelConfig
from tlmsearch.core.validate import check_top, file_present
from tlmsearch.errors import ConfigError
from tlmsearch.noise_floor import NoiseFloor, ranking_gaps
from tlmsearch.pareto import pareto_front
from tlmsearch.rundir.io import require_dir
from tlmsearch.rundir.layout import SEARCH_CONFIG
from tlmsearch.rundir.lr import run_calibration
from tlmsearch.rundir.noise import noise_floor
from tlmsearch.rundir.records import SEARCH_KINDS, TrialRecord, read_records

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


class Study:
    """The trials of one run directory, as plain data (`tlmsearch.rundir.load(run_dir)`).

    `records` holds every `TrialRecord` in the order trials ended; `trials` is the same as a
    pandas DataFrame (one row per record; metrics, shape statistics and sampled parameters
    flattened into columns). `best`, `pareto_front` and `baselines` consider the search's own
    trials (kinds baseline and sampled), and the first two only trials that reached full
    fidelity (all steps, status complete) — ASHA-stopped trials never count.
    """

    def __init__(self, run_dir: str | Path, config: SearchConfig, records: list[TrialRecord]) -> None:
        self.run_dir = Path(run_dir)
        self.config = config
        self.records = records

    def __repr__(self) -> str:
        return f"Study({str(self.run_dir)!r}, {len(self.records)} records)"

    @property
    def objectives(self) -> tuple[str, ...]:
        return self.config.objectives

    @property
    def trials(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([_row(r) for r in self.records], columns=_columns(self.records))

    def counts(self) -> dict[str, int]:
        """Records per status, over the search's own trials."""
        own = [r for r in self.records if r.kind in SEARCH_KINDS]
        return {s: sum(r.status == s for r in own) for s in ("complete", "stopped", "failed")}

    def full_fidelity(self) -> list[TrialRecord]:
        """The search's trials that trained all steps with a finite value for every objective."""
        return [
            r
            for r in self.records
            if r.kind in SEARCH_KINDS
            and r.finished()
            and all(math.isfinite(objective_value(r, o)) for o in self.objectives)
        ]

    def noise_floor(self) -> NoiseFloor | None:
        """The seed-to-seed spread of val_loss at trial fidelity (`tlmsearch.noise_floor`), from
        the noise trials recorded so far; None for a search run without one (`noise_seeds=0`)."""
        return noise_floor(self.config, self.records)

    def lr_calibration(self) -> LrCalibration | None:
        """The learning-rate calibration (`tlmsearch.configs.lr_calibration`): the grid's losses and the
        chosen rate, from the "lr" trials recorded so far; None for a search run without one."""
        return run_calibration(self.run_dir, self.config, self.records)

    def best(self, k: int = 5) -> pd.DataFrame:
        """The `k` full-fidelity trials with the lowest validation loss.

        Columns `gap` (val_loss minus the best's, nats), `gap_sd` (that gap in units of the noise
        floor) and `tie` (True when the gap is inside the floor: `tlmsearch.noise_floor.is_tie`)
        say which search-time differences mean something; `gap_sd` and `tie` are empty (NaN /
        None) without a measured floor.
        """
        check_top("best: k", k)  # the bound of status --top and verify --top-k
        ranked = sorted(self.full_fidelity(), key=lambda r: objective_value(r, "val_loss"))[:k]
        frame = self._frame(ranked)
        floor = self.noise_floor()
        sd = floor.sd if floor is not None and floor.usable else math.nan
        gaps = ranking_gaps([objective_value(r, "val_loss") for r in ranked], sd)
        frame["gap"] = [g["gap"] for g in gaps]
        frame["gap_sd"] = [math.nan if g["gap_sd"] is None else g["gap_sd"] for g in gaps]
        frame["tie"] = [g["tie"] for g in gaps]
        return frame

    def pareto_front(self) -> pd.DataFrame:
        """Non-dominated full-fidelity trials on the objectives, sorted by validation loss.

        With one objective this is the best trial (or several with exactly equal loss).
        """
        pool = self.full_fidelity()
        points = [[objective_value(r, o) for o in self.objectives] for r in pool]
        minimize = [OBJECTIVES[o] == "min" for o in self.objectives]
        front = [pool[i] for i in pareto_front(points, minimize)]
        return self._frame(sorted(front, key=lambda r: objective_value(r, "val_loss")))

    def baselines(self) -> pd.DataFrame:
        """The seeded baseline trials of the search, whatever their status."""
        return self._frame([r for r in self.records if r.kind == "baseline"])

    def record(self, trial_id: str) -> TrialRecord:
        for r in self.records:
            if r.trial_id == trial_id:
                return r
        raise KeyError(trial_id)

    def model_of(self, record: TrialRecord) -> ModelConfig:
        """The exact model a trial trained (its record's `model`)."""
        model = record.model_config
        if model is None:
            raise ConfigError(f"trial {record.trial_id!r} holds no model (status {record.status}): it never trained")
        return model

    def _frame(self, records: list[TrialRecord]) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([_row(r) for r in records], columns=_columns(self.records))


def objective_value(record: TrialRecord, objective: str) -> float:
    return record.metric(OBJECTIVE_METRICS[objective])


_BASE_COLUMNS = [
    "trial_id", "number", "kind", "baseline", "status", "reason", "profile", "family", "base_width",
    "widths", "seed", "steps", "max_steps", "full_fidelity", "wall_s", "started_at", "ended_at",
]  # fmt: skip


def _row(r: TrialRecord) -> dict[str, Any]:
    spec = r.spec if r.profile else None
    row: dict[str, Any] = {
        "trial_id": r.trial_id, "number": r.number, "kind": r.kind, "baseline": r.baseline,
        "status": r.status, "reason": r.reason, "profile": str(spec) if spec else None,
        "family": spec.family if spec else None, "base_width": r.budget.get("base_width"),
        "widths": list(r.widths), "seed": r.seed, "steps": r.steps, "max_steps": r.max_steps,
        "full_fidelity": r.full_fidelity, "wall_s": r.wall_s, "started_at": r.started_at, "ended_at": r.ended_at,
    }  # fmt: skip
    row.update(r.metrics)
    row.update({f"shape_{k}": v for k, v in r.shape.items()})
    row.update({f"param_{k}": v for k, v in r.params.items()})
    return row


def _columns(records: list[TrialRecord]) -> list[str]:
    cols = list(_BASE_COLUMNS)
    for r in records:
        for key in _row(r):
            if key not in cols:
                cols.append(key)
    return cols


def load(run_dir: str | Path) -> Study:
    """Read a search run directory (its `search.yaml` and `trials.jsonl`)."""
    run_dir = require_dir(run_dir)
    path = run_dir / SEARCH_CONFIG
    if path.is_dir():
        raise ConfigError(f"{path} is a folder, not a file: a search run keeps its config there as a YAML file")
    if not file_present(path, "run file"):  # a FIFO or a link loop: one line, never a wait
        raise ConfigError(f"{run_dir} is not a search run directory (no {SEARCH_CONFIG})")
    return Study(run_dir, load_run_config(path), read_records(run_dir))
