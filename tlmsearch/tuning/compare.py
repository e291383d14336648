"""Controlled comparison: train a fixed list of profiles with several seeds (no sampler, no early
stopping) into a new run directory, then judge them with the verify statistics and report.

The paper's experiment (uniform vs one third of the layers wider early/middle/late vs cosine):

    from tlmsearch.tuning.compare import compare
    result = compare(["uniform", "groups:early", "groups:middle", "groups:late", "cosine"],
                     arch="transformer", preset="cpu-s", seeds=3)

The run directory holds `search.yaml` (a SearchConfig whose baselines are the compared
profiles, so `tlmsearch.load`, `report` and `export` read it like a search), `compare.json`
(profiles and seeds) and `trials.jsonl` with records of kind "compare". The report is written
by the public `tlmsearch.compare` (`tlmsearch.api`): training does not write reports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlmsearch.analysis.stats import check_method
from tlmsearch.analysis.summary import verdicts
from tlmsearch.analysis.verdict import Verdict, resolve_levels
from tlmsearch.config import DataConfig, TrainConfig
from tlmsearch.errors import UserError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.io import write_json
from tlmsearch.rundir.layout import COMPARE, SEARCH_CONFIG, create_run_dir
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.search_config import SearchConfig
from tlmsearch.tuning.announce import announce, fixed_line
from tlmsearch.tuning.fixed import FixedTrial, run_fixed
from tlmsearch.tuning.runner import resolve


@dataclass(frozen=True)
class CompareResult:
    run_dir: Path
    profiles: list[str]
    seeds: list[int]
    records: list[TrialRecord]  # the records of this comparison
    verdicts: list[Verdict]  # empty when cosine is not among the profiles


def compare(
    profiles: Sequence[str],
    *,
    arch: str = "transformer",
    preset: str = "cpu-s",
    seeds: int = 3,
    steps: int | None = None,
    base_width: int = 0,
    name: str = "",
    runs_dir: str | Path = "runs",
    model: Mapping[str, Any] | None = None,
    train: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    cpus_per_trial: float = 1.0,
    gpus_per_trial: float = 0.0,
    seed: int = 0,
    threshold: float | None = None,
    confidence: float | None = None,
    method: str = "t",
    margin: float | None = None,
    alpha: float | None = None,
    address: str | None = None,
    progress: bool = True,
) -> CompareResult:
    """Train every profile in `profiles` (ProfileSpec texts) with seeds seed..seed+seeds-1.

    `train`/`data` are TrainConfig/DataConfig fields, `model` ModelConfig or preset overrides.
    Writes the run directory (no report: see `tlmsearch.compare`).
    """
    if not profiles:
        raise UserError("compare needs at least one profile, e.g. --families uniform cosine")
    if seeds < 1:
        raise UserError(f"seeds={seeds} must be >= 1")
    margin, alpha = resolve_levels(margin, alpha, threshold=threshold, confidence=confidence)
    check_method(method, seeds)  # before any training: the bootstrap needs enough seeds
    specs = [ProfileSpec.parse(p) for p in profiles]  # ConfigError names a bad one
    texts = [str(s) for s in specs]
    if len(set(texts)) != len(texts):
        raise UserError(f"profiles {texts} repeat a profile")
    train_cfg = TrainConfig.from_dict(dict(train or {}), where="train")
    if steps is not None:
        train_cfg = train_cfg.replace(steps=steps, warmup_steps=min(train_cfg.warmup_steps, steps))
    cfg = SearchConfig(
        name=name or "",
        runs_dir=str(Path(runs_dir)),
        arch=arch,
        preset=preset,
        model=dict(model or {}),
        base_width=base_width,
        space="families",
        scheduler="none",
        trials=len(specs) * seeds,
        cpus_per_trial=cpus_per_trial,
        gpus_per_trial=gpus_per_trial,
        seed=seed,
        baselines=tuple(texts),
        train=train_cfg,
        data=DataConfig.from_dict(dict(data or {}), where="data"),
    )
    # everything (numbers, names, models, memory, runs_dir) is checked before the run directory
    # exists and before Ray starts, so a refused compare leaves nothing behind to block a retry
    resolve(cfg)
    run_path = create_run_dir(runs_dir, name or None, prefix=f"compare-{arch}")
    cfg = cfg.replace(name=run_path.name)
    cfg.save(run_path / SEARCH_CONFIG)
    seed_list = [seed + i for i in range(seeds)]
    write_json(run_path / COMPARE, {"profiles": texts, "seeds": seed_list, "steps": train_cfg.steps})
    items = [FixedTrial(spec=s, seed=k, base_width=base_width or None, name=str(s)) for s in specs for k in seed_list]
    if progress:
        what = f"compare {run_path.name} ({len(specs)} profiles x {seeds} seeds)"
        announce(fixed_line, address, cfg, len(items), what)
    new = run_fixed(run_path, cfg, items, kind="compare", address=address, progress=progress)
    vs = verdicts(
        new,
        margin=margin,
        alpha=alpha,
        arch=arch,
        kinds=("compare",),
        method=method,
    )
    return CompareResult(run_path, texts, seed_list, list(new), vs)
