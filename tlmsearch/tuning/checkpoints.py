"""Checkpoints kept only while a trial can still need them.

A trial's checkpoints (`<tune folder>/trial_<id>/checkpoint_*`, on the trial storage) serve one
purpose: to continue that trial after an interruption (a Ctrl-C, a killed driver, a worker Ray
restarts). Once the trial is recorded in `trials.jsonl` nothing reads them again: a resumed
search marks every recorded trial ended in Tune's snapshot before the restore
(`tuning.snapshot`), so it is never trained again, and the analysis reads the records only.
`RecordWriter` therefore drops a trial's checkpoints as soon as its record is written, and once
more for every recorded trial when the fit ends (a stopped worker may have written one last
checkpoint after its trial ended); `SearchConfig.keep_checkpoints` keeps them all. Trials that
were not recorded (cut by a Ctrl-C) keep theirs: the resume continues from them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tlmsearch.tuning.store_dir import StoreDir

CHECKPOINTS = "checkpoint_*"


def drop_checkpoints(trial_dir: StoreDir) -> int:
    """Delete the checkpoint folders of one trial's folder; return how many went. A folder
    that cannot be deleted (permissions, a store error) stays: a cache that failed to shrink
    is no reason to stop a search."""
    removed = 0
    for checkpoint in trial_dir.glob(CHECKPOINTS):
        try:
            checkpoint.rmtree()
        except OSError:
            continue
        removed += 1
    return removed


def trial_folder(trial: Any) -> StoreDir | None:
    """A Tune trial's folder on its storage, or None when Tune has not given it one yet."""
    storage = getattr(trial, "storage", None)
    if storage is None:
        return None
    try:
        path = str(storage.trial_fs_path)
        fs = storage.storage_filesystem
    except (AttributeError, TypeError, ValueError):  # no trial folder name yet
        return None
    return StoreDir(location=path, fs=fs, path=path.rstrip("/") or path)


def drop_trial_checkpoints(trials: Iterable[Any], recorded: set[str] | frozenset[str]) -> int:
    """Drop the checkpoints of the Tune trials whose ids are in `recorded`; return how many went."""
    removed = 0
    for trial in trials:
        if trial.trial_id not in recorded:
            continue
        folder = trial_folder(trial)
        if folder is not None:
            removed += drop_checkpoints(folder)
    return removed
