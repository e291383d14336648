"""Bring Tune's saved snapshot of a search in line with `trials.jsonl` before a restore.

Tune saves its experiment (`experiment_state-*.json`: the trials and their states), its search
generator (`search_gen_state-*.json`, a pickle: how many trials it has created, and the
concurrency limiter's live trials) and the searcher at most once a second, into a staging
folder that a background thread then copies into `tune/`. A driver killed between two
snapshots leaves a snapshot that lags behind the run's records:

- a trial that ended (and was recorded) after the snapshot is RUNNING in it, so Tune would
  train it again from its checkpoint, and tell the Optuna trial it belongs to again although
  that one has finished;
- a trial created after the snapshot is missing from it, and the generator's count of created
  trials misses it too, so Tune would create one trial too many for each such trial that was
  recorded (a search of 8 trials ended with 9 or 10 records);
- the limiter's live trials name the trials RUNNING in the snapshot, so a trial that is not
  run again would hold a concurrency slot for ever, and a trial it does not name would never
  be told to the searcher.

`reconcile_snapshot` rewrites the newest snapshot from the records: a recorded trial is
TERMINATED (it is not run again); the generator has created exactly as many trials as the run
has recorded or will still record from the snapshot, so it creates only the missing ones; the
limiter's live trials are those that will run. Both files are replaced atomically. The
generator's saved experiment is also pointed at the run directory where it now lies (a copied
or moved run). Files it cannot read are left alone: `reconcile.tune_state_problem` names them.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlmsearch.rundir.records import SEARCH_KINDS, TrialRecord
from tlmsearch.tuning.store_dir import StoreDir

_ENDED = ("TERMINATED", "ERROR")


@dataclass(frozen=True, kw_only=True)
class SnapshotFix:
    """What `reconcile_snapshot` changed: trials marked ended, and the generator's count."""

    ended: tuple[str, ...] = ()
    created_before: int | None = None
    created_after: int | None = None

    def __str__(self) -> str:
        parts = []
        if self.ended:
            parts.append(f"{len(self.ended)} recorded trial(s) marked ended")
        if self.created_before != self.created_after:
            parts.append(f"trials created {self.created_before} -> {self.created_after}")
        return ", ".join(parts) or "nothing to change"


def _write_atomic(path: StoreDir, data: bytes) -> None:
    path.write_bytes(data)  # temp file + rename on a local filesystem (`StoreDir.write_bytes`)


def _newest(tune_dir: StoreDir, pattern: str) -> StoreDir | None:
    paths = sorted(tune_dir.glob(pattern), key=lambda p: p.name)
    return paths[-1] if paths else None


def _trial_states(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(entry[0]) for entry in state["trial_data"]]


def _will_record(trial: dict[str, Any], runtime: dict[str, Any]) -> bool:
    """Whether a trial of the snapshot without a record will get one when Tune restores it:
    it runs again (PENDING/RUNNING/PAUSED), or ended with a result or an error (`RecordWriter`
    records those from the restored state); a TERMINATED trial that never reported does not."""
    if trial["status"] != "TERMINATED":
        return True
    return "step" in (runtime.get("last_result") or {})


def reconcile_snapshot(
    tune_dir: str | Path | StoreDir, root: str | Path | StoreDir, records: list[TrialRecord], trials: int
) -> SnapshotFix:
    """Rewrite the newest snapshot in `tune_dir` to agree with `records` (see module doc).

    `root` is the trial storage `tune_dir` now lies in (the run directory, or the run's folder in
    `SearchConfig.storage`; either may be an object store); `trials` is the search's total
    (`SearchConfig.trials`); `records` every record of the run, including those of an earlier
    Tune experiment set aside by a rebuild.
    """
    tune_dir, root = StoreDir.of(tune_dir), StoreDir.of(root)
    recorded = {r.trial_id for r in records if r.kind in SEARCH_KINDS}
    path = _newest(tune_dir, "experiment_state-*.json")
    try:
        state = json.loads(path.read_text()) if path else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        state = None
    if state is None:
        _relocate_generator(tune_dir, root, None)
        return SnapshotFix()
    ended: list[str] = []
    live: set[str] = set()
    to_record = set(recorded)
    for entry in state["trial_data"]:
        trial = json.loads(entry[0])
        runtime = json.loads(entry[1])
        tid = trial["trial_id"]
        if tid in recorded:
            if trial["status"] not in _ENDED:
                trial["status"] = "TERMINATED"
                entry[0] = json.dumps(trial)
                ended.append(tid)
            continue
        if _will_record(trial, runtime):
            to_record.add(tid)
        if trial["status"] not in _ENDED:
            live.add(tid)
    if ended:
        _write_atomic(path, json.dumps(state).encode())  # type: ignore[arg-type]
    before, after = _relocate_generator(tune_dir, root, (len(to_record), trials, live))
    return SnapshotFix(ended=tuple(ended), created_before=before, created_after=after)


def _relocate_generator(
    tune_dir: StoreDir, root: StoreDir, counts: tuple[int, int, set[str]] | None
) -> tuple[int | None, int | None]:
    """Point the generator's experiment at the storage `root` and, with `counts` (trials recorded or to
    be recorded, the search's total, live trial ids), set its count of created trials and its
    limiter's live trials. Returns the count before and after."""
    path = _newest(tune_dir, "search_gen_state-*.json")
    if path is None:
        return None, None
    try:
        state = pickle.loads(path.read_bytes())
        storage = state["experiment"].storage
    except Exception:  # noqa: BLE001 - Tune's own restore reports a damaged file
        return None, None
    before = after = int(state["counter"])
    changed = False
    if storage.storage_fs_path != root.path or storage.experiment_dir_name != tune_dir.name:
        storage.storage_fs_path, storage.experiment_dir_name = root.path, tune_dir.name
        changed = True
    if counts is not None:
        will_record, total, live = counts
        # this experiment creates `total_samples` trials in all; the search needs `total - will_record` more
        after = max(0, int(state["total_samples"]) - max(0, total - will_record))
        if after != before:
            state["counter"], changed = after, True
        limiter = state.get("name:ConcurrencyLimiter")
        if limiter is not None and set(limiter.get("live_trials", ())) != live:
            limiter["live_trials"], limiter["num_unfinished_live_trials"] = set(live), len(live)
            changed = True
    if changed:
        _write_atomic(path, pickle.dumps(state))
    return before, after
