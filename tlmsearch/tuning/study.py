"""`Study`: a search run directory read back — records, a DataFrame, best trials, Pareto front."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tlmsearch.errors import ConfigError
from tlmsearch.tuning.config import OBJECTIVE_METRICS, OBJECTIVES, SearchConfig
from tlmsearch.tuning.records import TrialRecord, read_records

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

SEARCH_KINDS = ("baseline", "sampled")


class Study:
    """The trials of one run directory (`tlmsearch.load(run_dir)`).

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
            and r.full_fidelity
            and all(math.isfinite(objective_value(r, o)) for o in self.objectives)
        ]

    def best(self, k: int = 5) -> pd.DataFrame:
        """The `k` full-fidelity trials with the lowest validation loss."""
        ranked = sorted(self.full_fidelity(), key=lambda r: objective_value(r, "val_loss"))
        return self._frame(ranked[:k])

    def pareto_front(self) -> pd.DataFrame:
        """Non-dominated full-fidelity trials on the objectives, sorted by validation loss.

        With one objective this is the best trial (or several with exactly equal loss).
        """
        from tlmsearch.analysis.pareto import pareto_front

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

    # analysis, reports and export: thin delegates to tlmsearch.analysis / report / export

    def verify(self, top_k: int = 5, seeds: int = 3, steps: int | None = None, **kwargs: Any) -> Any:
        """Re-train the top-k profiles and the baselines with seeds (`tlmsearch.analysis.verify.verify`)."""
        from tlmsearch.analysis.verify import verify

        result = verify(self, top_k, seeds, steps, **kwargs)
        self.records = read_records(self.run_dir)
        return result

    def verdicts(self, threshold: float = 0.01, confidence: float = 0.95) -> list[Any]:
        """The near-optimality verdicts from the run's verify/compare records (empty before verify)."""
        from tlmsearch.analysis.summary import EVAL_KINDS, verdicts

        return verdicts(
            self.records, threshold=threshold, confidence=confidence, arch=self.config.arch, kinds=EVAL_KINDS
        )

    def report(self, out_dir: str | Path | None = None, **kwargs: Any) -> dict[str, Path]:
        """Write report.html, summary.md, summary.json (`tlmsearch.report.write_report`)."""
        from tlmsearch.report import write_report

        return write_report(self.run_dir, out_dir, **kwargs)

    def export(self, fmt: str = "native", trial: str = "best", out_dir: str | Path | None = None, **kwargs: Any) -> Any:
        """Export a trial's widths (`tlmsearch.export.export_run`); returns the `Export`."""
        from tlmsearch.export import export_run

        return export_run(self, trial, fmt, out_dir, **kwargs)[0]

    def _frame(self, records: list[TrialRecord]) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([_row(r) for r in records], columns=_columns(self.records))


def objective_value(record: TrialRecord, objective: str) -> float:
    value = record.metrics.get(OBJECTIVE_METRICS[objective])
    return float(value) if isinstance(value, int | float) else math.nan


_BASE_COLUMNS = [
    "trial_id", "number", "kind", "baseline", "status", "reason", "profile", "family", "base_width",
    "widths", "seed", "steps", "max_steps", "full_fidelity", "wall_s", "started_at", "ended_at",
]  # fmt: skip


def _row(r: TrialRecord) -> dict[str, Any]:
    from tlmsearch.profiles import ProfileSpec

    spec = ProfileSpec.from_dict(r.profile) if r.profile else None
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
    from tlmsearch.tuning.runner import CONFIG_FILE

    run_dir = Path(run_dir)
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a search run directory (no {CONFIG_FILE})")
    return Study(run_dir, SearchConfig.load(path), read_records(run_dir))
