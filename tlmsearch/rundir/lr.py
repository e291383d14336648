"""Which learning-rate calibration trials a search needs, and its calibration read from the
records (plain data; the rule is `tlmsearch.configs.lr_calibration` and `configs.lr_rule`).

A calibration trial is uniform at one rate of the grid the run's `search.yaml` names
(`SearchConfig.lr_calibration`, written out as explicit rates when the search starts) and one of
the paired seeds `seed, seed+1, ..., seed+lr_calibration_seeds-1` (the same at every rate), for
`calibration_steps` steps, recorded once in `trials.jsonl` with kind "lr" and its rate in
`params["lr"]`; never told to the sampler. The records are the source of truth: a (rate, seed)
with a record (whatever its status) is never trained again, the grid's widening beyond an edge
is recomputed from them, and so is the chosen rate, so a resume after a kill anywhere ends with
the same grid and the same rate.

A run directory written before `lr_calibration_seeds` existed reads as one seed per rate
(`configs.search.load_run_config`): complete as it was, chosen by the lowest loss as it was.

In a budget sweep the calibration runs at the sweep's middle base width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tlmsearch.configs.lr_calibration import MAX_WIDEN, OFF, grid, same_rate
from tlmsearch.configs.lr_choice import LrCalibration, calibrate
from tlmsearch.configs.resolve import calibration_train, default_base_width
from tlmsearch.configs.search import SearchConfig, load_run_config
from tlmsearch.core.base import TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.io import read_json_object, write_json
from tlmsearch.rundir.layout import SEARCH_CONFIG
from tlmsearch.rundir.records import LR_KIND, TrialRecord

LR_CALIBRATION = "lr_calibration.json"  # the calibration's grid, losses and chosen rate
UNIFORM = str(ProfileSpec.parse("uniform"))


def lr_base_width(cfg: SearchConfig) -> int | None:
    """The base width the calibration trains at: None (the search's fixed budget) or the sweep's middle one."""
    return default_base_width(cfg) if cfg.base_widths else None


def calibration_rates(cfg: SearchConfig) -> tuple[float, ...]:
    """The rates of the search's configured grid (() when calibration is off; widening may add
    more, `lr_calibration`). A run's `search.yaml` holds them explicitly (`runner.resolve`);
    "auto" in a config not yet resolved centres on `train.lr`."""
    return grid(cfg.lr_calibration, cfg.train.lr) if cfg.lr_calibration != OFF else ()


def calibration_seeds(cfg: SearchConfig) -> tuple[int, ...]:
    """The paired seeds every rate trains: `seed, seed+1, ..., seed+lr_calibration_seeds-1`."""
    return tuple(cfg.seed + k for k in range(cfg.lr_calibration_seeds))


def calibration_runs(cfg: SearchConfig) -> int:
    """Runs of the configured grid (rates x seeds; widening adds `lr_calibration_seeds` a rate)."""
    return len(calibration_rates(cfg)) * cfg.lr_calibration_seeds


def lr_train(cfg: SearchConfig) -> TrainConfig:
    """The training of each calibration trial (`configs.resolve.calibration_train`)."""
    return calibration_train(cfg)


def lr_steps(cfg: SearchConfig) -> int:
    """Steps of each calibration trial (`lr_train`)."""
    return calibration_train(cfg).steps


def rate_of(record: TrialRecord) -> float:
    """The rate a calibration record trained at (its Tune config's `lr`; nan when missing)."""
    value = record.params.get("lr", record.train.get("lr"))
    return float(value) if isinstance(value, int | float) else math.nan


def _record_for(rate: float, seed: int, records: Sequence[TrialRecord]) -> TrialRecord | None:
    for r in records:
        if r.kind == LR_KIND and r.seed == seed and same_rate(rate_of(r), rate):
            return r
    return None


def missing_rates(cfg: SearchConfig, records: Sequence[TrialRecord]) -> list[tuple[float, int]]:
    """The (rate, seed) runs of the calibration's grid so far (widened as `lr_calibration` says)
    with no record yet; a recorded run, whatever its status, is not re-run."""
    calibration = lr_calibration(cfg, records, cfg.train.lr)
    return calibration.missing if calibration is not None else []


def lr_calibration(cfg: SearchConfig, records: Sequence[TrialRecord], configured: float) -> LrCalibration | None:
    """The calibration so far (None when the search has none); `configured`: the rate the grid
    was centred on before the choice replaced `train.lr` (`configured_rate`). The grid widens
    as the records say (`configs.lr_choice.calibrate`) until a later phase has trained
    (any record of another kind): from then on it holds the rates already recorded and adds no
    other, so the rate those runs trained at stays."""
    rates = calibration_rates(cfg)
    if not rates:
        return None

    def run(rate: float, seed: int) -> tuple[bool, float, str | None]:
        r = _record_for(rate, seed, records)
        if r is None:
            return False, math.nan, None
        return True, r.metric("val_loss") if r.finished() else math.nan, r.reason

    # once a later phase trained, the grid widens no further than the rates already recorded
    # (the same rule on the same records adds them again, so the rate those runs used stays)
    beyond = {round(rate_of(r), 12) for r in records if r.kind == LR_KIND} - {round(rate, 12) for rate in rates}
    widen = len(beyond) if any(r.kind != LR_KIND for r in records) else MAX_WIDEN
    return calibrate(rates, calibration_seeds(cfg), run, configured=configured, steps=lr_steps(cfg), widen=widen)


def configured_rate(run_dir: str | Path, cfg: SearchConfig) -> float:
    """The rate the run was configured with, before a calibration chose another: kept in
    `lr_calibration.json` once written, else `train.lr` (not chosen yet)."""
    data = read_lr_calibration(run_dir)
    value = data.get("configured") if data else None
    return float(value) if isinstance(value, int | float) else cfg.train.lr


def write_lr_calibration(run_dir: str | Path, calibration: LrCalibration | None) -> Path | None:
    """Write `lr_calibration.json` (nothing when the search has no calibration)."""
    if calibration is None:
        return None
    path = Path(run_dir) / LR_CALIBRATION
    write_json(path, calibration.to_dict())
    return path


def read_lr_calibration(run_dir: str | Path) -> dict[str, Any] | None:
    """`lr_calibration.json` of a run directory (None when it has none or it is unreadable)."""
    try:
        return read_json_object(Path(run_dir) / LR_CALIBRATION)
    except ConfigError:  # damaged: the records still hold the calibration (`lr_calibration`)
        return None


def at_search_rate(cfg: SearchConfig, search_dir: str | Path) -> SearchConfig:
    """`cfg` training at the rate of the search in `search_dir` (its `search.yaml`'s `train.lr`:
    the calibrated one once its calibration chose), with no calibration of its own; `cfg`
    unchanged in rate when that search has no `search.yaml` yet."""
    path = Path(search_dir) / SEARCH_CONFIG
    cfg = cfg.replace(lr_calibration=OFF)
    if not path.is_file():
        return cfg
    return cfg.replace(train=cfg.train.replace(lr=load_run_config(path).train.lr))


def run_calibration(run_dir: str | Path, cfg: SearchConfig, records: Sequence[TrialRecord]) -> LrCalibration | None:
    """A run's calibration as its records say (`status`, the study summary): None without one."""
    return lr_calibration(cfg, records, configured_rate(run_dir, cfg))


def rate_line(cfg: SearchConfig, calibration: LrCalibration | None) -> str:
    """'learning rate: 0.002 (...)': the rate the run's trials train at and where it came from."""
    if calibration is None:
        return f"learning rate: {cfg.train.lr:.6g} (as configured; not calibrated)"
    return f"learning rate: {calibration.rate:.6g}; {calibration.describe()}"
