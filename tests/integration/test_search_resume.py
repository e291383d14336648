"""Stop the driver of a running `python -m tlmsearch search` (SIGINT), move its run directory, then `resume`.

Every trial must end up recorded exactly once. Tune's state and the checkpoints lie in a separate
trial storage (`--storage file://...`) and the run directory is moved before the resume, which
finds them through `locations.json`; it takes 2 CPUs a trial from then on (`--cpus-per-trial`).
The same stop without a separate storage is integration/test_resume_kill.py's SIGTERM case (the
driver turns a SIGTERM into the SIGINT stop); a SIGKILL right after the first record is its
first-record kill point, resumed by its copied/moved case with the same checks. Starts its own
local Ray in the subprocesses (slow).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import read_lines, wait_for_first_record

ARGS = [
    "--preset", "tiny", "--model", "n_layers=4", "--corpus", "pydoc", "--steps", "20", "--eval-interval", "10",
    "--batch-size", "8", "--train", "eval_windows=8", "--train", "warmup_steps=2", "--trials", "7",
    "--noise-seeds", "0", "--quiet",
]  # fmt: skip


@pytest.mark.slow
def test_stopped_search_resumes_after_its_run_directory_moved(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "tlmsearch", "search", *ARGS, "--runs-dir", str(tmp_path), "--name", "run"]
    cmd += ["--storage", f"file://{tmp_path}/store"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_for_first_record(proc, run / "trials.jsonl", poll=0.3)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    before = read_lines(run / "trials.jsonl")
    assert 1 <= len(before) < 7, "the search should have been cut short"
    assert proc.returncode == 130 and b"tlmsearch resume" in proc.stderr.read()  # type: ignore[union-attr]
    # the run directory holds no Tune state; it moves, the storage stays
    assert not (run / "tune").exists() and any((tmp_path / "store" / "run" / "tune").glob("trial_*"))
    run = run.rename(tmp_path / "moved")

    done = subprocess.run(
        [sys.executable, "-m", "tlmsearch", "resume", str(run), "--quiet", "--json", "--cpus-per-trial", "2"],
        env=env, capture_output=True, timeout=400,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    records = read_lines(run / "trials.jsonl")
    ids = [r["trial_id"] for r in records]
    assert len(records) == 7 and len(set(ids)) == 7
    assert ids[: len(before)] == [r["trial_id"] for r in before]  # finished trials kept, never rewritten
    # resumed with 2 CPUs a trial (one at a time on two cores), still trained with the 1 thread of before
    assert {r["resources"].get("CPU") for r in records[len(before) :]} == {2.0}
    assert {r["train"]["threads"] for r in records} == {1}
    assert sorted(r["baseline"] for r in records if r["kind"] == "baseline") == sorted(
        ["uniform", "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5", "cosine:start=0.5,end=1.5"]
    )
    numbers = [r["number"] for r in records if r["number"] >= 0]
    assert len(numbers) == len(set(numbers))  # no Optuna trial ran twice
    assert all(r["status"] in ("complete", "stopped") for r in records)
    status = json.loads(done.stdout)
    assert status["ended"] == 7
    assert not (run / "tune").exists() and not (tmp_path / "run").exists()
    assert json.loads((run / "locations.json").read_text())["tune"] == f"file://{tmp_path}/store/run/tune"
    trials = list((tmp_path / "store" / "run" / "tune").glob("trial_*"))
    kept = [c for t in trials for c in t.glob("checkpoint_*")]
    assert len(trials) == 7 and not kept, trials  # checkpoints dropped once recorded
