"""Fixed trials: a given list of (profile, seed) trained in parallel through Ray at full fidelity.

Used by `verify` and `compare` (the analysis commands): no sampler, no early stopping; each
ended trial is appended to the run directory's `trials.jsonl` with the caller's `kind`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.storage import normalise
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.locations import record_folder
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.runner import fit_fixed, fixed_config, start_ray
from tlmsearch.tuning.trial_storage import run_root


@dataclasses.dataclass(frozen=True)
class FixedTrial:
    """One trial of `run_fixed`: a profile, a seed, optionally a base width and a name."""

    spec: ProfileSpec
    seed: int = 0
    base_width: int | None = None
    name: str | None = None  # e.g. the baseline this re-evaluates; goes to TrialRecord.baseline
    lr: float | None = None  # the rate it trains at (replacing train.lr; in TrialRecord.params["lr"])
    lr_factor: float | None = None  # that rate over the run's (the rate check's 0.5, 1, 2), in params too

    def config(self, kind: str, index: int) -> dict[str, Any]:
        """Its Tune config as the `index`-th trial of a batch of `kind` (`runner.fixed_config`)."""
        extra = {"baseline": self.name or None, "lr": self.lr, "lr_factor": self.lr_factor}
        return fixed_config(str(self.spec), self.seed, kind, index, base_width=self.base_width, **extra)


def run_fixed(
    run_dir: str | Path,
    search_cfg: SearchConfig,
    items: list[FixedTrial],
    kind: str = "verify",
    steps: int | None = None,
    *,
    address: str | None = None,
    progress: bool = False,
) -> list[TrialRecord]:
    """Train a fixed list of (profile, seed) trials in parallel at full fidelity.

    No sampler, no early stopping. Each ended trial is appended to `<run_dir>/trials.jsonl`
    as a record of `kind` ("verify", "compare", ...); returns the new records in `items` order.
    `steps` overrides `search_cfg.train.steps`. Tune's folder of the batch lies in
    `<trial storage>/fixed/<kind>-<time>`: below the run directory, or below the run's folder in
    `search_cfg.storage` (recorded in `locations.json`).
    """
    if not items:
        return []
    cfg = search_cfg if steps is None else search_cfg.replace(train=search_cfg.train.replace(steps=steps))
    cfg = cfg.replace(name=cfg.name or "fixed", storage=normalise(cfg.storage))
    run_dir = Path(run_dir).resolve()
    root = run_root(cfg, run_dir)
    configs = [item.config(kind, i) for i, item in enumerate(items)]
    start_ray(cfg, address, root)
    run_dir.mkdir(parents=True, exist_ok=True)
    record_folder(run_dir, "fixed", root if cfg.storage else None)
    writer = fit_fixed(cfg, run_dir, root, configs, kind, progress, resumable=False)
    by_index = {int(writer.configs[r.trial_id].get("index", -1)): r for r in writer.written}
    return [by_index[i] for i in range(len(items)) if i in by_index]
