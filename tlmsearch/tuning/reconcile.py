"""Bring Tune's and Optuna's state in line with the run's own records before a resume.

`trials.jsonl` is the source of truth for which trials ended. Tune's saved experiment state
(`tune/`) and the Optuna journal (`optuna.log`) are caches of the search's progress that a
kill can leave empty, cut or behind the records. This module

- says whether Tune's state can be restored at all (`tune_state_problem`);
- repairs the journal: a last line cut by a crash is removed (kept in `optuna.log.torn`); a
  garbled line earlier is a one-line error naming the file and the line;
- closes Optuna trials left RUNNING (or WAITING) by a killed driver: a trial with a record gets
  the record's outcome (COMPLETE with its values, PRUNED, FAIL), one without becomes FAIL (the
  search runs a fresh trial in its place; its user attribute `fail_reason` says so), so no
  trial stays RUNNING for ever.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tlmsearch.errors import ConfigError
from tlmsearch.rundir.io import cut_torn_tail
from tlmsearch.rundir.layout import OPTUNA_LOG
from tlmsearch.rundir.records import SEARCH_KINDS, TrialRecord
from tlmsearch.search_config import OBJECTIVE_METRICS, SearchConfig
from tlmsearch.tuning.store_dir import StoreDir

if TYPE_CHECKING:  # pragma: no cover
    import optuna


def _nonempty(path: StoreDir) -> bool:
    return path.size() > 0


def tune_state_problem(tune_dir: str | Path | StoreDir) -> str | None:
    """Why Tune cannot restore the experiment in `tune_dir` (None when it looks whole).

    A kill while Tune rewrites its state can leave `experiment_state-*.json`,
    `search_gen_state-*.json` or `searcher-state-*.pkl` empty or cut; restoring from them
    would fail, or silently start the search over. `tune_dir` may lie in the trial storage
    (`SearchConfig.storage`: a shared path or an object store).
    """
    tune_dir = StoreDir.of(tune_dir)
    if not tune_dir.is_dir():
        return f"{tune_dir} is missing"
    if not _nonempty(tune_dir / "tuner.pkl"):
        return f"{tune_dir / 'tuner.pkl'} is missing or empty"
    if not _whole_pickle(tune_dir / "tuner.pkl"):
        return f"{tune_dir / 'tuner.pkl'} is damaged (cut short or garbled)"
    states = sorted(tune_dir.glob("experiment_state-*.json"), key=lambda p: p.name)
    if not states:
        return f"{tune_dir} holds no experiment_state-*.json"
    newest = states[-1]
    try:
        json.loads(newest.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return f"{newest} is damaged ({type(exc).__name__})"
    for pattern in ("search_gen_state-*.json", "searcher-state-*.pkl"):  # both are pickles
        for path in tune_dir.glob(pattern):
            if not _nonempty(path):
                return f"{path} is empty"
            if not _whole_pickle(path):
                return f"{path} is damaged (cut short or garbled)"
    return None


def _whole_pickle(path: Path | StoreDir) -> bool:
    """Whether `path` holds one complete pickle stream, read without running any of it (a copy
    cut by a kill ends before the pickle's STOP)."""
    import pickletools

    try:
        data = path.read_bytes()
        end = max(pos or 0 for _, _, pos in pickletools.genops(data))
    except (OSError, ValueError, KeyError, IndexError):  # `genops`: truncated stream, unknown opcode
        return False
    return end == len(data) - 1


def repair_journal(run_dir: Path) -> bool:
    """Check `optuna.log` line by line; cut a torn last line. True when it was changed.

    Call it holding the run directory's lock (`run_lock`): it also removes the journal's lock
    file, which only a killed driver can have left behind then.

    Raises a one-line `ConfigError` for a garbled line before the last: everything after it
    would be unreadable to Optuna, and guessing what it held could re-run or lose trials.
    """
    path = run_dir / OPTUNA_LOG
    # the journal's own lock left by a killed driver: stale, as this process holds the run's lock
    # (else Optuna waits on it and then warns on every resume)
    stale = path.with_name(path.name + ".lock")
    if stale.is_symlink() or stale.exists():
        stale.unlink()
    if not path.is_file():
        return False
    cut = cut_torn_tail(path)
    if cut:
        print(
            f"warning: {path}: removed a last line cut short by a crash ({cut} bytes, kept in {path.name}.torn)",
            file=sys.stderr,
        )
    with path.open("rb") as fh:
        for number, line in enumerate(fh, start=1):
            try:
                json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise ConfigError(
                    f"{path}: line {number} is garbled, so the sampler's history cannot be read; put back a "
                    f"good copy of the file, or keep its first {number - 1} lines (`head -n {number - 1}`) "
                    "and resume (trials after that point are then known only from trials.jsonl)"
                ) from None
    return bool(cut)


INTERRUPTED = "interrupted: its driver stopped before the trial ended; the search ran another trial in its place"


def _values(record: TrialRecord, cfg: SearchConfig) -> list[float] | None:
    values = [record.metric(OBJECTIVE_METRICS.get(o, o)) for o in cfg.objectives]
    return values if all(math.isfinite(v) for v in values) else None


def _outcome(record: TrialRecord | None, cfg: SearchConfig) -> tuple[Any, list[float] | None]:
    from optuna.trial import TrialState

    if record is None or record.status == "failed":
        return TrialState.FAIL, None
    if record.status == "complete" and record.full_fidelity:
        values = _values(record, cfg)
        return (TrialState.COMPLETE, values) if values else (TrialState.FAIL, None)
    return TrialState.PRUNED, None


def close_zombies(study: optuna.Study, records: list[TrialRecord], cfg: SearchConfig) -> dict[str, int]:
    """Finish every RUNNING/WAITING trial of `study` from its record (FAIL when it has none).

    Call it only when no trial of this study is running: before a resume rebuilds the search,
    or after a search ended with every trial recorded. Returns counts by new state.
    """
    from optuna.trial import TrialState

    by_number = {r.number: r for r in records if r.kind in SEARCH_KINDS and r.number >= 0}
    counts: dict[str, int] = {}
    storage = study._storage
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING)):
        record = by_number.get(trial.number)
        state, values = _outcome(record, cfg)
        if record is None:  # FAIL keeps it from every sampler; say why, as it did not fail itself
            storage.set_trial_user_attr(trial._trial_id, "fail_reason", INTERRUPTED)
        storage.set_trial_state_values(trial._trial_id, state=state, values=values)
        counts[state.name] = counts.get(state.name, 0) + 1
    return counts


def open_study(run_dir: Path) -> optuna.Study | None:
    """The search's study in `run_dir`'s journal (None when there is no journal or study yet)."""
    import optuna

    from tlmsearch.tuning.searcher import STUDY_NAME, open_storage  # lazy: heavy (ray)

    if not (run_dir / OPTUNA_LOG).is_file():
        return None
    try:
        return optuna.load_study(study_name=STUDY_NAME, storage=open_storage(str(run_dir)))
    except KeyError:  # the journal holds no study of that name (created, then killed)
        return None


def prune_checkpoints(tune_dir: str | Path | StoreDir) -> int:
    """Keep only the newest checkpoint of each trial; return how many were removed.

    Called once every trial is recorded and Tune has saved its final state (all trials
    ended), so no restore can need the older ones.
    """
    removed = 0
    for trial_dir in StoreDir.of(tune_dir).glob("trial_*"):
        checkpoints = [c for c in trial_dir.glob("checkpoint_*") if c.is_dir()]
        for old in checkpoints[:-1]:
            try:
                old.rmtree()
            except OSError:
                continue
            removed += 1
    return removed
