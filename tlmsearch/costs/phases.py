"""What the search and verify commands will train, phase by phase: the one count both the
commands' plan lines (`tuning.announce`) and `tlmsearch plan` (`costs.plan`) price.

A **search** trains, in start order, its learning-rate calibration's runs and its noise floor's
extra seeds of uniform (full length), its baselines (full length), then its sampled trials
(from ASHA's first rung to full length), each at the search's trial length: its steps, or its
tokens per non-embedding parameter (the search's default: 5, the screening length), resolved
once (`configs.resolve.resolve_trial_length`). A **verify** re-trains the `top_k` best profiles,
cosine, uniform and the controls with its seeds at the deciding length
(`configs.verify.retrain_config`: 20 tokens per parameter after a search that screened at 5);
with planned seeds a pilot of `pilot_seeds` seeds, then between 2 and `max_seeds - pilot_seeds`
fresh seeds a profile. The best may be among the baselines and controls, so the profiles re-trained
are `controls + 2` to `top_k + controls + 2`.
"""

from __future__ import annotations

from typing import NamedTuple

from tlmsearch.configs.lr_calibration import OFF, grid
from tlmsearch.configs.resolve import calibration_weight, resolve_trial_length
from tlmsearch.configs.search import SearchConfig, noise_runs
from tlmsearch.configs.verify import DEFAULT_MAX_SEEDS, DEFAULT_PILOT_SEEDS, retrain_config
from tlmsearch.costs.estimate import Work, search_work

VERIFY_TOP_K = 5  # `tlmsearch verify`'s default
VERIFY_CONTROLS = 3  # verify's controls beside cosine and uniform (`analysis.plan.CONTROLS`)


class Phase(NamedTuple):
    """One phase a command trains: its runs (fewest, most), each of `steps` optimizer steps."""

    name: str
    runs: tuple[int, int]
    steps: int
    config: SearchConfig  # what its runs train (the trial length resolved to steps)


def lr_runs(cfg: SearchConfig) -> int:
    """The learning-rate calibration's runs counted in trial lengths: its grid's rates x its paired
    seeds, each `configs.resolve.calibration_weight` trials long (4 in a study, which calibrates at
    its verification's length); 0 when off. A grid widened past an edge adds `lr_calibration_seeds`
    runs a rate, not counted here."""
    if cfg.lr_calibration == OFF:
        return 0
    return round(len(grid(cfg.lr_calibration, cfg.train.lr)) * cfg.lr_calibration_seeds * calibration_weight(cfg))


def search_runs(cfg: SearchConfig, *, done: int = 0, at_once: int = 1) -> Work:
    """The runs a search of `cfg` (its length resolved) trains, in start order (`done`: trials
    already recorded, for a resume: the calibration and the noise floor are then done too)."""
    levels = cfg.budget_levels if cfg.base_widths else 1
    before = 0 if done else noise_runs(cfg) + lr_runs(cfg)
    n_base = min(cfg.trials, len(cfg.baselines) * levels) + before
    first_rung = None if cfg.scheduler == "none" else cfg.grace
    return search_work(
        cfg.trials + before, cfg.train.steps, baselines=n_base, first_rung=first_rung, slots=at_once, done=done
    )


def verify_runs(top_k: int, seeds: int, controls: int) -> tuple[int, int]:
    """Fewest and most runs of a verify of the `top_k` best, 2 baselines and `controls` controls
    with `seeds` seeds: the best may already be among the baselines and controls."""
    return (2 + controls) * seeds, (top_k + 2 + controls) * seeds


def search_phase(cfg: SearchConfig) -> Phase:
    """The search `cfg` describes: its runs (calibration and noise floor included) and steps."""
    cfg = resolve_trial_length(cfg)
    work = search_runs(cfg)
    return Phase("search", (len(work.runs), len(work.runs)), cfg.train.steps, cfg)


def verify_phase(
    cfg: SearchConfig,
    *,
    top_k: int = VERIFY_TOP_K,
    controls: int = VERIFY_CONTROLS,
    seeds: int = 0,
    pilot_seeds: int = DEFAULT_PILOT_SEEDS,
    max_seeds: int = DEFAULT_MAX_SEEDS,
) -> Phase:
    """`tlmsearch verify` of the search `cfg` with its defaults: `seeds` > 0 seeds, or (0) planned
    seeds, a pilot of `pilot_seeds` then 2 to `max_seeds - pilot_seeds` fresh ones a profile."""
    retrain, _ = retrain_config(cfg, seeds=seeds or pilot_seeds)
    if seeds:
        runs = verify_runs(top_k, seeds, controls)
    else:
        fewest = verify_runs(top_k, pilot_seeds + 2, controls)[0]
        runs = (fewest, verify_runs(top_k, max_seeds, controls)[1])
    return Phase("verify", runs, retrain.train.steps, retrain)
