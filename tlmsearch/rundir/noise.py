"""Which noise-floor trials a search needs, and its floor read from the records (plain data).

The noise floor (`tlmsearch.noise_floor`) is uniform trained with seeds `seed, seed+1, ...,
seed+noise_seeds-1` at the search's trial fidelity. Seed `seed` is the search's own uniform
baseline trial whenever the search runs one (uniform among its baselines, within its trials):
that trial is fed to the sampler once, as every baseline is. The other seeds are trials of kind
"noise": trained before the search as fixed trials (no sampler, no early stopping), recorded
once in `trials.jsonl`, and never told to Optuna, so the sampler sees one uniform profile like
in a search without a floor and is not biased towards it. When the search does not run uniform
itself (other baselines, too few trials), seed `seed` is a noise trial too.

In a budget sweep the floor is measured at the sweep's first (lowest) base width.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tlmsearch.configs.resolve import sweep_levels
from tlmsearch.configs.search import SearchConfig, search_runs_uniform
from tlmsearch.noise_floor import NoiseFloor
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.io import write_json
from tlmsearch.rundir.layout import NOISE_FLOOR
from tlmsearch.rundir.records import NOISE_KIND, TrialRecord

UNIFORM = str(ProfileSpec.parse("uniform"))


def noise_base_width(cfg: SearchConfig) -> int | None:
    """The base width the noise trials train at: None (the search's fixed budget) or the sweep's first."""
    levels = sweep_levels(cfg)
    return levels[0] if levels else None


def noise_trial_seeds(cfg: SearchConfig) -> list[int]:
    """The seeds trained as noise trials (kind "noise"): all floor seeds but the search's own."""
    if cfg.noise_seeds < 2:
        return []
    seeds = [cfg.seed + k for k in range(cfg.noise_seeds)]
    return seeds[1:] if search_runs_uniform(cfg) else seeds


def missing_noise_seeds(cfg: SearchConfig, records: Sequence[TrialRecord]) -> list[int]:
    """The noise seeds with no record yet: a recorded noise trial (whatever its status) is
    never trained again, so a resume re-runs only those a kill cut short."""
    done = {r.seed for r in records if r.kind == NOISE_KIND}
    return [s for s in noise_trial_seeds(cfg) if s not in done]


def _at_noise_budget(cfg: SearchConfig, r: TrialRecord) -> bool:
    width = noise_base_width(cfg)
    return width is None or r.base_width == width


def floor_records(cfg: SearchConfig, records: Sequence[TrialRecord]) -> list[TrialRecord]:
    """The finished records the floor is measured on, one per seed, in seed order: the noise
    trials and the search's uniform baseline at seed `cfg.seed` (at the noise budget)."""
    wanted = set(noise_trial_seeds(cfg)) | ({cfg.seed} if cfg.noise_seeds >= 2 else set())
    by_seed: dict[int, TrialRecord] = {}
    for r in records:
        if r.seed not in wanted or r.seed in by_seed or not r.finished() or not _at_noise_budget(cfg, r):
            continue
        noise = r.kind == NOISE_KIND
        own_uniform = r.kind == "baseline" and r.seed == cfg.seed and r.profile and str(r.spec) == UNIFORM
        if noise or own_uniform:
            by_seed[r.seed] = r
    return [by_seed[s] for s in sorted(by_seed)]


def noise_floor(cfg: SearchConfig, records: Sequence[TrialRecord]) -> NoiseFloor | None:
    """The search's floor so far (None when the search asked for none: `noise_seeds` 0)."""
    if cfg.noise_seeds < 2:
        return None
    used = floor_records(cfg, records)
    return NoiseFloor(
        seeds=tuple(r.seed for r in used),
        values=tuple(r.metric("val_loss") for r in used),
        planned=cfg.noise_seeds,
        steps=cfg.train.steps,
    )


def write_noise_floor(run_dir: str | Path, floor: NoiseFloor | None) -> Path | None:
    """Write `noise_floor.json` (nothing when the search has no floor)."""
    if floor is None:
        return None
    path = Path(run_dir) / NOISE_FLOOR
    write_json(path, floor.to_dict())
    return path
