"""A run's resources changed when it is resumed: what each trial holds and how many run at once.

    lines = change_resources("runs/big", cpus_per_trial=1, max_concurrent=2)

Resources never change what a trial trains: a trial trains with its `train.threads` threads on
its device whatever it is given beside, so its numbers are the same (on CPU, bit for bit; over
another number of data-parallel workers, `workers_per_trial`, to the rounding of the gradient
sums, `tlmsearch.training.parallel`). So a
search, a study or a ladder may resume on a machine with more cores, or share them differently,
and its records stay one experiment. A run whose threads follow its CPUs per trial
(`train.threads` 0) keeps the threads its trials trained with: they are written out before the
CPUs change. One change is refused: a run that trained on CPUs does not continue on GPUs (or
the reverse), since its trials' numbers would then mix devices.

Every config that sets them is rewritten (atomically, under each run directory's lock): a
search's `search.yaml`; a study's `study.yaml` and every search of its phases (`<arch>/`,
`random-<arch>/`, `transfer-<arch>/`); a ladder's `ladder.yaml` and every point's search. All
are checked before any is written, so a refused value changes nothing.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from tlmsearch.configs.search import gpu_setting, gpus_for, load_run_config, split_gpus
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.files import LADDER_CONFIG, is_ladder
from tlmsearch.ladders.files import load_config as load_ladder
from tlmsearch.rundir.io import write_text
from tlmsearch.rundir.layout import SEARCH_CONFIG
from tlmsearch.rundir.lock import run_lock
from tlmsearch.studies.files import STUDY_CONFIG, is_study
from tlmsearch.studies.files import load_config as load_study

RESOURCE_FIELDS = ("cpus_per_trial", "gpus_per_trial", "workers_per_trial", "max_concurrent")
# a ladder runs its points' trials as Ray gives slots
LADDER_FIELDS = ("cpus_per_trial", "gpus_per_trial", "workers_per_trial")


def change_resources(run_dir: str | Path, **changes: Any) -> list[str]:
    """Set `changes` (RESOURCE_FIELDS; None = keep) in every config of the run at `run_dir`;
    returns one line per setting changed (empty when nothing changes)."""
    changes = {k: v for k, v in changes.items() if v is not None}
    if unknown := sorted(set(changes) - set(RESOURCE_FIELDS)):
        raise ConfigError(f"{', '.join(unknown)}: not a resource setting (allowed: {', '.join(RESOURCE_FIELDS)})")
    if not changes:
        return []
    if "gpus_per_trial" in changes:  # N > 1 GPUs per trial: N data-parallel workers of one GPU each
        gpus, workers = split_gpus(gpu_setting(changes["gpus_per_trial"]), changes.get("workers_per_trial", 1))
        changes["gpus_per_trial"] = gpus
        if workers != 1 or "workers_per_trial" in changes:
            changes["workers_per_trial"] = workers
    run_dir = Path(run_dir)
    writes: dict[Path, str] = {}
    if is_ladder(run_dir):
        if extra := sorted(set(changes) - set(LADDER_FIELDS)):
            raise ConfigError(
                f"{', '.join(extra)}: a ladder has no such setting; it resumes with "
                f"{', '.join(LADDER_FIELDS)} (its points' trials run as many at once as Ray has slots)"
            )
        top = load_ladder(run_dir)
        before = {k: getattr(top, k) for k in changes}
        train = top.train.replace(threads=_threads(top.train.threads, top.cpus_per_trial, changes))
        writes[run_dir / LADDER_CONFIG] = top.replace(**changes, train=train).to_yaml()
    elif is_study(run_dir):
        study = load_study(run_dir)
        before = {k: getattr(study.search, k) for k in changes}
        threads = _threads(study.search.train.threads, study.search.cpus_per_trial, changes)
        flat_train = {**study.flat_dict()["train"], "threads": threads}
        writes[run_dir / STUDY_CONFIG] = study.with_fields(**changes, train=flat_train).to_yaml()
    elif (run_dir / SEARCH_CONFIG).is_file():
        before = {}  # the search's own, read below
    else:
        raise ConfigError(f"{run_dir} is not a search, study or ladder run directory (no {SEARCH_CONFIG})")
    gpus = before.get("gpus_per_trial")
    if gpus is not None and bool(gpus_for(changes["gpus_per_trial"])) != bool(gpus_for(gpus)):
        raise ConfigError(_device_error(run_dir, before["gpus_per_trial"], changes["gpus_per_trial"]))
    searches = [run_dir / SEARCH_CONFIG] if not before else []
    searches += sorted(p for p in run_dir.glob(f"*/{SEARCH_CONFIG}") if p.is_file())
    for path in searches:
        cfg = load_run_config(path)
        train = cfg.train.replace(threads=_threads(cfg.train.threads, cfg.cpus_per_trial, changes))
        new = cfg.replace(**changes, train=train)  # a bad value: one line, before anything is written
        if bool(new.gpu_share) != bool(cfg.gpu_share):
            raise ConfigError(_device_error(path.parent, cfg.gpus_per_trial, new.gpus_per_trial))
        writes[path] = new.to_yaml()
        before = before or {k: getattr(cfg, k) for k in changes}
    with contextlib.ExitStack() as locks:
        for folder in sorted({p.parent for p in writes}):
            locks.enter_context(run_lock(folder))
        for path, text in writes.items():
            write_text(path, text)
    return [
        f"{run_dir}: {k.replace('_', '-')} {_num(before[k])} -> {_num(v)}" for k, v in changes.items() if before[k] != v
    ]


def _num(value: Any) -> str:
    """A resource as a line shows it: a number in its shortest form, or "auto"."""
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def _threads(threads: int, cpus_per_trial: float, changes: dict[str, Any]) -> int:
    """A trial's torch threads, written out when they followed the CPUs per trial (0) and those
    change (`configs.trial`: threads = CPUs per trial unless set)."""
    return threads or (max(1, int(cpus_per_trial)) if "cpus_per_trial" in changes else 0)


def _device_error(where: Path, old: float | str, new: float | str) -> str:
    return (
        f"{where}: gpus-per-trial {_num(old)} -> {_num(new)} would move its trials between CPUs and GPUs, mixing "
        "devices in one experiment; resume it with GPUs per trial on the same side of 0, or start a new run"
    )


__all__ = ["RESOURCE_FIELDS", "change_resources"]
