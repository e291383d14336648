"""The Optuna journal holds every evaluation of every trial, keyed by training step, and a
search killed with SIGKILL and resumed keeps them.

Ray hands a result to the searcher's `on_trial_result` only when the scheduler lets the trial
go on, so the evaluation that got a trial stopped must reach Optuna another way; this checks
it does, end to end, on real Ray (each `tlmsearch` process starts a local Ray of its own).

The driver is killed right after its third record, with Tune's snapshot frozen after its
second save (`tests/helpers/killing_driver.py`), as a kill between two snapshots leaves it.
The resume reads none of Tune's state: it writes the journal anew from `trials.jsonl` (every
recorded trial told as the running search told it), so a lagging snapshot can neither re-run
recorded trials nor create trials too many (as restoring it once did: 9 to 11 records of 8).
Slow: two short searches' worth of trials on 2 cores.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from cli_runs import read_lines

ARGS = [
    "--preset", "tiny", "--model", "n_layers=4", "--corpus", "pydoc", "--space", "knots", "--steps", "30",
    "--eval-interval", "10", "--grace-steps", "10", "--batch-size", "8", "--train", "eval_windows=8",
    "--train", "warmup_steps=2", "--trials", "8", "--baseline", "uniform", "--max-concurrent", "2",
    "--noise-seeds", "0", "--quiet",
]  # fmt: skip


@pytest.mark.slow
def test_pruned_trials_last_value_and_step_are_in_the_journal_after_sigkill_and_resume(tmp_path: Path) -> None:
    from tlmsearch.tuning.searcher import STUDY_NAME, open_storage

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    run = tmp_path / "run"
    driver = str(Path(__file__).parents[1] / "helpers" / "killing_driver.py")
    cmd = [sys.executable, driver, "search", *ARGS, "--runs-dir", str(tmp_path), "--name", "run"]
    kill = {"KILL_AFTER_RECORDS": "3", "FREEZE_SNAPSHOT_AFTER": "2"}
    proc = subprocess.Popen(
        cmd, env={**env, **kill}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        _, err = proc.communicate(timeout=400)
        assert proc.returncode == -signal.SIGKILL, err.decode()[-2000:]
    finally:
        if _group_alive(proc.pid):  # the killed driver's own Ray processes
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = read_lines(run / "trials.jsonl")
    assert len(before) == 3, "the search should have been cut short"

    done = subprocess.run(
        [sys.executable, "-m", "tlmsearch", "resume", str(run), "--quiet"], env=env, capture_output=True, timeout=500
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    records = read_lines(run / "trials.jsonl")
    assert len(records) == 8 == len({r["trial_id"] for r in records}) == len({r["number"] for r in records})
    assert records[:3] == before  # nothing recorded before the kill was run or written again

    study = optuna.load_study(study_name=STUDY_NAME, storage=open_storage(str(run)))
    trials = {t.number: t for t in study.trials}
    stopped = [r for r in records if r["status"] == "stopped"]
    assert stopped, "ASHA stopped no trial: nothing to check"
    assert not [t.number for t in study.trials if t.state.name in ("RUNNING", "WAITING")]
    for r in records:  # every evaluation, keyed by training step; recorded before the kill or after
        t = trials[r["number"]]
        assert t.intermediate_values == {int(c["step"]): c["val_loss"] for c in r["curve"]}, r["number"]
    for r in stopped:  # the evaluation that stopped it is its last intermediate value, and its value
        t = trials[r["number"]]
        assert t.state == optuna.trial.TrialState.PRUNED
        assert max(t.intermediate_values) == r["steps"] < 30
        assert t.value == pytest.approx(t.intermediate_values[r["steps"]]) == pytest.approx(r["metrics"]["val_loss"])
    # a trial pruned before the kill kept its last value and step through the resume
    kept = [r for r in before if r["status"] == "stopped"]
    assert kept, "no trial was pruned before the kill: nothing to check"
    for r in kept:
        assert trials[r["number"]].intermediate_values[r["steps"]] == pytest.approx(r["metrics"]["val_loss"])


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
