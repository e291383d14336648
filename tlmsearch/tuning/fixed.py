"""Fixed trials: a given list of (profile, seed) trained in parallel through Ray at full fidelity.

Used by `verify` and its rate check, `compare` and a study's transfer: no sampler, no early
stopping; each ended trial is appended to the run directory's `trials.jsonl` with the caller's
`kind`. With `pack` the trials of one shape train side by side as packs (`tuning.pack_runs`).

    records = run_fixed(run_dir, cfg, items, "verify", pack="auto")
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.storage import normalise
from tlmsearch.configs.verify import check_pack
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.locations import record_folder
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.runner import fit_configs, fixed_config, start_ray
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
    pack: str = "off",
    address: str | None = None,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
) -> list[TrialRecord]:
    """Train a fixed list of (profile, seed) trials in parallel at full fidelity.

    No sampler, no early stopping. Each ended trial is appended to `<run_dir>/trials.jsonl`
    as a record of `kind` ("verify", "compare", ...); returns the new records in `items` order
    (a trial whose record was not written, after a Ctrl-C, left out). `steps` overrides
    `search_cfg.train.steps`; `pack` ("off", "on", "auto") trains the trials of one shape side by
    side (`tuning.pack_runs`), each still one record. Tune's folder of the batch lies in
    `<trial storage>/fixed/<kind>-<time>`: below the run directory, or below the run's folder in
    `search_cfg.storage` (recorded in `locations.json`).
    """
    by_index = train_items(
        run_dir, search_cfg, items, kind, steps, pack=pack, address=address, progress=progress, say=say
    )
    return [by_index[i] for i in range(len(items)) if i in by_index]


def train_items(
    run_dir: str | Path,
    search_cfg: SearchConfig,
    items: list[FixedTrial],
    kind: str,
    steps: int | None = None,
    *,
    pack: str = "off",
    address: str | None = None,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
) -> dict[int, TrialRecord]:
    """`run_fixed`'s records by their item's index in `items`."""
    if not items:
        return {}
    cfg = search_cfg if steps is None else search_cfg.replace(train=search_cfg.train.replace(steps=steps))
    cfg = cfg.replace(name=cfg.name or "fixed", storage=normalise(cfg.storage), pack=check_pack(pack))
    run_dir = Path(run_dir).resolve()
    root = run_root(cfg, run_dir)
    configs = [item.config(kind, i) for i, item in enumerate(items)]
    start_ray(cfg, address, root)  # before the packs are chosen: they are sized by the trials Ray runs at once
    run_dir.mkdir(parents=True, exist_ok=True)
    record_folder(run_dir, "fixed", root if cfg.storage else None)
    return fit_configs(cfg, run_dir, root, configs, kind, progress, say=say, resumable=False)
