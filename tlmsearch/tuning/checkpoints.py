"""Checkpoints: kept only while a trial can still need them, and found again by the trial's identity.

A trial's checkpoints (`<tune folder>/trial_<id>/checkpoint_*`, on the trial storage) serve to
continue it after an interruption. Each holds the trial's Tune config (`TRIAL_FILE`), so a
resume finds the checkpoint of each trial `trials.jsonl` does not hold by its identity
(`trial_key`), never through Tune's saved state (`interrupted_trials`). Once a trial is recorded
`RecordWriter` drops its checkpoints (and again when the fit ends: a stopped worker may write
one more), unless `SearchConfig.keep_checkpoints`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tlmsearch.configs.trial import RESTORE, SPEC
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.store_dir import StoreDir

CHECKPOINTS = "checkpoint_*"
TRIAL_FILE = "trial.json"  # in every checkpoint of a search trial: its Tune config, less its spec
CURVE_FILE = "curve.json"  # in every checkpoint: the curve up to its step


def identity_config(config: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint's `TRIAL_FILE` holds of a trial's Tune config: its small identity keys,
    not the checkpoint it started from nor its spec (a resume builds the spec again, so a
    checkpoint written before trials carried specs resumes the same way)."""
    return {k: v for k, v in config.items() if k not in (RESTORE, SPEC)}


def trial_key(config: dict[str, Any]) -> str:
    """A search trial's identity across driver sessions (see module doc)."""
    number = int(config.get("number", -1))
    if number >= 0:
        return f"number {number}"
    return json.dumps({k: config.get(k) for k in ("baseline", "profile", "base_width", "seed")}, sort_keys=True)


def record_config(record: TrialRecord) -> dict[str, Any]:
    """The Tune config a recorded search trial ran with, as far as its identity and the
    scheduler's brackets read it."""
    config: dict[str, Any] = {**record.params, "profile": str(record.spec)}
    if record.baseline:
        config["baseline"] = record.baseline
    if record.number >= 0:
        config["number"] = record.number
    return config


@dataclass(frozen=True)
class Interrupted:
    """A trial left unfinished: its Tune config and its newest whole checkpoint, at `step`."""

    config: dict[str, Any]
    checkpoint: str
    step: int


def _read(checkpoint: StoreDir) -> Interrupted | None:
    try:
        config = json.loads((checkpoint / TRIAL_FILE).read_text())
        curve = json.loads((checkpoint / CURVE_FILE).read_text())
        step = int(curve[-1]["step"]) if curve else 0
    except (OSError, ValueError, KeyError, TypeError, IndexError):  # cut by a kill: an older one serves
        return None
    return Interrupted(config=config, checkpoint=checkpoint.location, step=step) if isinstance(config, dict) else None


def interrupted_trials(tune_dir: str, records: Iterable[TrialRecord]) -> list[Interrupted]:
    """The unrecorded trials of the search's Tune folder that a resume continues: for each
    identity without a record, its checkpoint that reached the furthest step. The folders of
    unrecorded trials that hold no such checkpoint are removed (nothing will use them)."""
    records = list(records)
    recorded = {trial_key(record_config(r)) for r in records if r.kind in ("baseline", "sampled")}
    ids = {r.trial_id for r in records}
    best: dict[str, tuple[Interrupted, StoreDir]] = {}
    useless: list[StoreDir] = []
    for folder in StoreDir.of(tune_dir).glob("trial_*"):
        if folder.name.removeprefix("trial_") in ids:
            continue
        found = next((c for c in map(_read, reversed(folder.glob(CHECKPOINTS))) if c is not None), None)
        key = trial_key(found.config) if found else ""
        if found is None or key in recorded:
            useless.append(folder)
        elif key not in best or found.step > best[key][0].step:
            useless += [best[key][1]] if key in best else []
            best[key] = (found, folder)
        else:
            useless.append(folder)
    for folder in useless:
        folder.rmtree()
    return sorted((i for i, _ in best.values()), key=lambda i: (int(i.config.get("number", -1)), trial_key(i.config)))


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
    """Drop the checkpoints of the Tune trials whose ids are in `recorded` (and the folder of
    the earlier session's trial each resumed one started from); return how many went."""
    removed = 0
    for trial in trials:
        if trial.trial_id not in recorded:
            continue
        folder = trial_folder(trial)
        if folder is not None:
            removed += drop_checkpoints(folder)
        source = (getattr(trial, "config", None) or {}).get(RESTORE)
        if source:
            try:
                StoreDir.of(str(source).rstrip("/").rsplit("/", 1)[0]).rmtree()
            except OSError:
                continue
    return removed
