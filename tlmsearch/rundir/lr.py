"""Which learning-rate calibration trials a search needs, and its calibration read from the
records (plain data; the rule is `tlmsearch.configs.lr_calibration`).

A calibration trial is uniform at the search's seed, at one rate of the grid the run's
`search.yaml` names (`SearchConfig.lr_calibration`, written out as explicit rates when the
search starts), for `calibration_steps` steps, recorded once in `trials.jsonl` with kind "lr"
and its rate in `params["lr"]`; never told to the sampler. The records are the source of
truth: a rate with a record (whatever its status) is never trained again, and the chosen rate
is recomputed from them, so a resume after a kill anywhere ends with the same rate.

In a budget sweep the calibration runs at the sweep's middle base width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tlmsearch.configs.lr_calibration import OFF, LrCalibration, calibration_steps, grid, same_rate
from tlmsearch.configs.resolve import default_base_width
from tlmsearch.configs.search import SearchConfig, load_run_config
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
    """The rates of the search's grid (() when calibration is off). A run's `search.yaml` holds
    them explicitly (`runner.resolve`); "auto" in a config not yet resolved centres on `train.lr`."""
    return grid(cfg.lr_calibration, cfg.train.lr) if cfg.lr_calibration != OFF else ()


def lr_steps(cfg: SearchConfig) -> int:
    """Steps of each calibration trial (`lr_calibration_fraction` of the trial length)."""
    return calibration_steps(cfg.train.steps, cfg.lr_calibration_fraction)


def rate_of(record: TrialRecord) -> float:
    """The rate a calibration record trained at (its Tune config's `lr`; nan when missing)."""
    value = record.params.get("lr", record.train.get("lr"))
    return float(value) if isinstance(value, int | float) else math.nan


def _record_for(rate: float, records: Sequence[TrialRecord]) -> TrialRecord | None:
    for r in records:
        if r.kind == LR_KIND and same_rate(rate_of(r), rate):
            return r
    return None


def missing_rates(cfg: SearchConfig, records: Sequence[TrialRecord]) -> list[float]:
    """The grid's rates with no record yet (a recorded rate, whatever its status, is not re-run)."""
    return [rate for rate in calibration_rates(cfg) if _record_for(rate, records) is None]


def lr_calibration(cfg: SearchConfig, records: Sequence[TrialRecord], configured: float) -> LrCalibration | None:
    """The calibration so far (None when the search has none); `configured`: the rate the grid
    was centred on before the choice replaced `train.lr` (`configured_rate`)."""
    rates = calibration_rates(cfg)
    if not rates:
        return None
    found = [_record_for(rate, records) for rate in rates]
    return LrCalibration(
        rates=rates,
        losses=tuple(r.metric("val_loss") if r is not None and r.finished() else math.nan for r in found),
        trained=tuple(r is not None for r in found),
        configured=configured,
        steps=lr_steps(cfg),
        reasons=tuple(r.reason if r is not None else None for r in found),
    )


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
