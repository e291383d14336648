"""SIGKILL a real `tlmsearch search` at several points, damage its state, copy and move it; resume.

A resume rebuilds from `trials.jsonl` alone (Tune's saved state is never read). After every
resume: each trial recorded exactly once, none marked failed (none did fail: the tiny trials
always train), no Optuna trial left RUNNING or WAITING, and nothing written outside the run
directory being resumed. Slow (each case starts its own local Ray in the
subprocesses, address="local"); kept small: 5 tiny trials of 20 steps.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_runs import kill_group

pytestmark = pytest.mark.slow

TRIALS = 5
ARGS = [
    "--preset", "tiny", "--model", "n_layers=4", "--corpus", "pydoc", "--steps", "20", "--eval-interval", "5",
    "--batch-size", "8", "--train", "eval_windows=8", "--train", "warmup_steps=2", "--trials", str(TRIALS),
    "--sampler", "random", "--scheduler", "none", "--noise-seeds", "0", "--quiet",
]  # fmt: skip
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return out


def _search_killed_when(runs: Path, name: str, when: Callable[[Path], bool], *extra: str) -> bool:
    """Start a search; SIGKILL its driver (then its Ray) as soon as `when(run_dir)`; True if killed."""
    cmd = ["search", *ARGS, *extra, "--runs-dir", str(runs), "--name", name]
    return _killed_when(cmd, runs / name, when)


def _killed_when(args: list[str], run: Path, when: Callable[[Path], bool]) -> bool:
    """Run `tlmsearch ARGS`; SIGKILL its driver (then its Ray) as soon as `when(run)`; True if killed."""
    cmd = [sys.executable, "-m", "tlmsearch", *args]
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    killed = False
    try:
        deadline = time.time() + 400
        while proc.poll() is None and time.time() < deadline:
            if when(run):
                proc.send_signal(signal.SIGKILL)
                killed = True
                break
            time.sleep(0.05)
        _, err = proc.communicate(timeout=60)
    finally:
        kill_group(proc)  # the rest of its Ray and its trial workers, as a crash would leave them
    assert killed or proc.returncode == 0, err.decode()[-3000:]
    assert b"Traceback" not in err, err.decode()[-3000:]
    return killed


def _resume(run: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "tlmsearch", "resume", str(run), "--quiet", "--json"]
    return subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=600)


def _optuna_open(run: Path) -> list[int]:
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = JournalStorage(JournalFileBackend(str(run / "optuna.log")))
    study = optuna.load_study(study_name="search", storage=storage)
    return [t.number for t in study.trials if t.state.name in ("RUNNING", "WAITING")]


def _check_whole(run: Path) -> list[dict]:
    records = _lines(run / "trials.jsonl")
    ids = [r["trial_id"] for r in records]
    assert len(ids) == TRIALS and len(set(ids)) == TRIALS, ids  # nothing lost, nothing twice
    numbers = [r["number"] for r in records if r["number"] >= 0]
    assert len(numbers) == len(set(numbers)), numbers  # no Optuna trial ran twice
    baselines = [r["baseline"] for r in records if r["kind"] == "baseline"]
    assert len(baselines) == len(set(baselines)) == 4, baselines
    assert [(r["status"], r["reason"]) for r in records if r["status"] == "failed"] == []
    assert _optuna_open(run) == []  # no zombie
    return records


def _newest_state_mtime(run: Path) -> float:
    states = list((run / "tune").glob("experiment_state-*.json"))
    return max((p.stat().st_mtime for p in states), default=0.0)


def _new_checkpoint(run: Path) -> Callable[[Path], bool]:
    """True once a trial folder that `run` did not hold when this was made has a checkpoint."""
    old = set((run / "tune").glob("trial_*"))
    return lambda run: any(t not in old and any(t.glob("checkpoint_*")) for t in (run / "tune").glob("trial_*"))


def _after_a_snapshot_with_checkpoints(run: Path) -> Callable[[Path], bool]:
    """True right after Tune rewrites its experiment state while a new trial (see
    `_new_checkpoint`) has a checkpoint."""
    new_checkpoint, seen = _new_checkpoint(run), []

    def when(run: Path) -> bool:
        if not new_checkpoint(run):
            return False
        mtime = _newest_state_mtime(run)
        if not seen:
            seen.append(mtime)
            return False
        return mtime != seen[0]

    return when


def _journal_created(run: Path) -> bool:
    return (run / "optuna.log").is_file() and (run / "optuna.log").stat().st_size > 0


@pytest.fixture(scope="module")
def killed_at_first_record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One search SIGKILLed right after its first record, left as the kill left it: the
    copied/moved case resumes copies of it (the first-record kill point: its first resume is
    that case's, with the same checks)."""
    runs = tmp_path_factory.mktemp("killed")
    assert _search_killed_when(runs, "run", lambda run: len(_lines(run / "trials.jsonl")) >= 1)
    return runs / "run"


def _resumed_whole(run: Path) -> list[dict]:
    done = _resume(run)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "lock file" not in done.stderr, done.stderr[-3000:]  # the killed driver's journal lock is cleared
    return _check_whole(run)


def test_sigkill_at_each_stage_in_turn_then_resume(tmp_path: Path) -> None:
    """One search SIGKILLed once its Optuna journal exists (nothing trained yet); its resume
    SIGKILLed once a new trial has its first checkpoint; that resume's resume SIGKILLed right
    after Tune saved its state with a checkpoint in it; then resumed to the end: every trial once.
    (The kill right after the first record is `killed_at_first_record`, resumed by the
    copied/moved case with the same checks.)"""
    run = tmp_path / "run"
    resume = ["resume", str(run), "--quiet"]
    killed = [_search_killed_when(tmp_path, "run", _journal_created)]
    killed.append(_killed_when(resume, run, _new_checkpoint(run)))
    killed.append(_killed_when(resume, run, _after_a_snapshot_with_checkpoints(run)))
    assert killed[:2] == [True, True], killed  # the last may find the search ended first
    records = _resumed_whole(run)
    print(f"killed={killed} records={len(records)}")


def test_sigterm_stops_the_search_like_ctrl_c_then_resume_completes(tmp_path: Path) -> None:
    """SIGTERM to the driver (as a batch scheduler sends it): exit status 130 as the README says,
    no traceback, the resume line printed; `resume` then records every trial once. (Ray's own
    driver handler would `sys.exit(15)` from inside Tune instead.)"""
    cmd = [sys.executable, "-m", "tlmsearch", "search", *ARGS, "--runs-dir", str(tmp_path), "--name", "run"]
    proc = subprocess.Popen(
        cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    run = tmp_path / "run"
    try:
        deadline = time.time() + 400
        while not _lines(run / "trials.jsonl"):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.time() < deadline, "no trial recorded in time"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=300)
    finally:
        kill_group(proc)  # a driver still running, or what its stop left of its Ray
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "tlmsearch resume" in err, err[-3000:]
    done = _resume(run)
    assert done.returncode == 0, done.stderr[-3000:]
    _check_whole(run)


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_copied_and_moved_run_directories_resume_in_place(killed_at_first_record: Path, tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    shutil.copytree(killed_at_first_record, a, symlinks=True)  # a killed search, as the kill left it
    shutil.copytree(a, b, symlinks=True)
    original, killed = _files(a), _files(killed_at_first_record)
    before = [r["trial_id"] for r in _lines(b / "trials.jsonl")]
    assert before  # killed after its first record
    records = _resumed_whole(b)  # the first-record kill point: every trial once, the journal lock cleared
    assert [r["trial_id"] for r in records[: len(before)]] == before  # recorded trials kept, never rewritten
    assert _files(a) == original and _files(killed_at_first_record) == killed  # nothing written to the originals
    a.rename(c)
    done = _resume(c)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not a.exists()  # the old place is not recreated
    _check_whole(c)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One whole search, with every trial's checkpoints kept (`--keep-checkpoints`): each case
    below damages a copy of it (one search for all of them). One trial at a time: the damage, not
    concurrency, is under test (the kills above land with two trials in flight)."""
    runs = tmp_path_factory.mktemp("finished")
    assert not _search_killed_when(runs, "done", lambda run: False, "--keep-checkpoints", "--max-concurrent", "1")
    _check_whole(runs / "done")
    return runs / "done"


def _copy(finished: Path, tmp_path: Path, checkpoints: bool = False) -> Path:
    """A copy of the finished search; without `checkpoints`, its trials' checkpoints deleted as
    a search without `--keep-checkpoints` deletes them once each trial is recorded."""
    run = tmp_path / "run"
    shutil.copytree(finished, run, symlinks=True)
    if not checkpoints:
        for folder in (run / "tune").glob("trial_*/checkpoint_*"):
            shutil.rmtree(folder)
    return run


def test_tune_state_plays_no_part_and_only_missing_trials_run(finished: Path, tmp_path: Path) -> None:
    """A resume rebuilds from `trials.jsonl` alone: Tune's saved state, emptied here as a kill
    mid-write leaves it, is never read; the two trials whose records are gone train again."""
    run = _copy(finished, tmp_path)
    for pattern in ("experiment_state-*.json", "search_gen_state-*.json", "searcher-state-*.pkl", "tuner.pkl"):
        for path in (run / "tune").glob(pattern):
            path.write_bytes(b"")
    lines = (run / "trials.jsonl").read_text().splitlines(keepends=True)
    (run / "trials.jsonl").write_text("".join(lines[:-2]))  # two trials ended unrecorded
    kept = [json.loads(line)["trial_id"] for line in lines[:-2]]
    done = _resume(run)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    records = _check_whole(run)
    assert [r["trial_id"] for r in records[:3]] == kept  # the recorded trials are not run again


def test_a_torn_last_record_is_cut_and_its_trial_trained_again(finished: Path, tmp_path: Path) -> None:
    run = _copy(finished, tmp_path)
    text = (run / "trials.jsonl").read_text()
    whole = text.splitlines(keepends=True)[:-1]
    (run / "trials.jsonl").write_text(text[: len(text) - len(text.splitlines()[-1]) // 2])
    done = _resume(run)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "removed a last line cut short" in done.stderr and "Traceback" not in done.stderr
    _check_whole(run)
    assert (run / "trials.jsonl").read_text().startswith("".join(whole))  # the whole records kept as they were


def test_a_trial_that_ended_unrecorded_comes_back_from_its_checkpoint_untrained(finished: Path, tmp_path: Path) -> None:
    """The driver died between a trial's last report and its record: the resume finds the
    trial's final checkpoint by the trial's identity (its Optuna number) and records the same
    trial, with the same curve and metrics, without training it again. (`--keep-checkpoints`
    keeps the checkpoints of recorded trials, so removing a record leaves that state.)"""
    run = _copy(finished, tmp_path, checkpoints=True)
    lines = (run / "trials.jsonl").read_text().splitlines(keepends=True)
    last = json.loads(lines[-1])
    (run / "trials.jsonl").write_text("".join(lines[:-1]))
    done = _resume(run)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    records = _check_whole(run)
    back = records[-1]
    assert back["trial_id"] != last["trial_id"] and back["number"] == last["number"] >= 0
    assert (back["curve"], back["metrics"], back["params"]) == (last["curve"], last["metrics"], last["params"])


def test_a_garbled_journal_is_written_anew_from_the_records(finished: Path, tmp_path: Path) -> None:
    run = _copy(finished, tmp_path)
    lines = (run / "optuna.log").read_text().splitlines(keepends=True)
    lines[2] = "{garbled" + lines[2][8:]
    (run / "optuna.log").write_text("".join(lines))
    before = (run / "trials.jsonl").read_text()
    done = _resume(run)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert (run / "trials.jsonl").read_text() == before  # every trial was recorded: nothing trains
    assert "{garbled" not in (run / "optuna.log").read_text()
    records = _check_whole(run)
    told = {r["number"]: "COMPLETE" if r["status"] == "complete" else "PRUNED" for r in records if r["number"] >= 0}
    assert {n: s for n, s in _optuna_states(run).items() if s != "FAIL"} == told  # re-told from the records


def _optuna_states(run: Path) -> dict[int, str]:
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = JournalStorage(JournalFileBackend(str(run / "optuna.log")))
    return {t.number: t.state.name for t in optuna.load_study(study_name="search", storage=storage).trials}


def test_deleted_tune_folder_runs_nothing_again(finished: Path, tmp_path: Path) -> None:
    run = _copy(finished, tmp_path)
    shutil.rmtree(run / "tune")
    before = (run / "trials.jsonl").read_text()
    done = _resume(run)
    assert done.returncode == 0, done.stderr[-3000:]
    # every trial has its record: resume returns at once, without Tune's state and without Ray
    assert "Traceback" not in done.stderr and not (run / "tune").exists()
    assert (run / "trials.jsonl").read_text() == before
    _check_whole(run)


DRIVER = str(Path(__file__).parents[1] / "helpers" / "killing_driver.py")


def _kill_points(seed: int, n: int) -> list[dict[str, str]]:
    """`n` kill points drawn from `seed`: right after the k-th Tune snapshot (state whole and
    newest), right after the k-th record, or at a record with Tune's snapshot frozen before it
    (state lagging behind the records, as a kill between two snapshots leaves it)."""
    import random

    rng = random.Random(seed)
    points: list[dict[str, str]] = []
    recorded = 0
    for _ in range(n):
        kind = rng.choice(["snapshot", "record", "frozen"])
        if kind == "snapshot":
            points.append({"KILL_AFTER_SNAPSHOT": str(rng.randint(1, 6))})
        else:
            recorded = min(TRIALS - 1, recorded + rng.randint(1, 2))
            point = {"KILL_AFTER_RECORDS": str(recorded)}
            if kind == "frozen":
                point["FREEZE_SNAPSHOT_AFTER"] = str(rng.randint(1, 3))
            points.append(point)
    return points


def _run_killable(args: list[str], kill: dict[str, str], run: Path) -> int:
    proc = subprocess.Popen(
        [sys.executable, DRIVER, *args], env={**ENV, **kill}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        _, err = proc.communicate(timeout=600)
    finally:
        kill_group(proc)  # the rest of its Ray and its trial workers, as a crash would leave them
    assert proc.returncode in (0, -signal.SIGKILL), err.decode()[-3000:]
    assert b"Traceback" not in err, err.decode()[-3000:]
    return proc.returncode


@pytest.mark.parametrize("seed", [2026])
def test_sigkill_at_seeded_random_points_then_resume(tmp_path: Path, seed: int) -> None:
    """One search killed (SIGKILL) and resumed again and again at kill points drawn from a
    seeded RNG, each resume killed at the next point, then resumed to the end."""
    run = tmp_path / "run"
    points = _kill_points(seed, 3)
    codes = [_run_killable(["search", *ARGS, "--runs-dir", str(tmp_path), "--name", "run"], points[0], run)]
    for point in points[1:]:
        if codes[-1] == 0:
            break  # the search ended before this point
        codes.append(_run_killable(["resume", str(run), "--quiet"], point, run))
    assert -signal.SIGKILL in codes, (points, codes)  # at least one kill landed
    done = _resume(run)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    records = _check_whole(run)  # every trial once, none failed, no Optuna trial RUNNING/WAITING
    study_fails = _optuna_fail_reasons(run)
    assert all(reason.startswith("interrupted") for reason in study_fails), study_fails
    print(f"seed {seed}: points={points} codes={codes} records={len(records)} interrupted={len(study_fails)}")


def _optuna_fail_reasons(run: Path) -> list[str]:
    """The `fail_reason` of every FAIL trial of the journal: only trials a kill interrupted."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = JournalStorage(JournalFileBackend(str(run / "optuna.log")))
    study = optuna.load_study(study_name="search", storage=storage)
    return [str(t.user_attrs.get("fail_reason")) for t in study.trials if t.state.name == "FAIL"]
