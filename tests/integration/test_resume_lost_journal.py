"""`optuna.log` deleted from an interrupted search: `resume` rebuilds from `trials.jsonl` (issue 31).

Tune's saved searcher names trials of the Optuna journal; with the journal gone, restoring it
ended in `KeyError: 'Record does not exist.'` (a traceback). The resume now sets Tune's state
aside and continues from the records, saying why in one note, and every trial is recorded once.
Slow: a search killed after 3 records, then resumed, in processes of their own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ARGS = [
    "--preset", "tiny", "--model", "n_layers=4", "--corpus", "pydoc", "--space", "knots", "--steps", "20",
    "--eval-interval", "10", "--grace-steps", "10", "--batch-size", "4", "--train", "eval_windows=4",
    "--train", "warmup_steps=2", "--trials", "6", "--baseline", "uniform", "--max-concurrent", "1",
    "--noise-seeds", "0", "--quiet",
]  # fmt: skip


@pytest.mark.slow
def test_resume_after_the_optuna_journal_was_deleted_rebuilds_from_the_records(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TLMSEARCH_CACHE": str(tmp_path / "cache")}
    run = tmp_path / "run"
    driver = str(Path(__file__).parents[1] / "helpers" / "killing_driver.py")
    cmd = [sys.executable, driver, "search", *ARGS, "--runs-dir", str(tmp_path), "--name", "run"]
    proc = subprocess.Popen(
        cmd, env={**env, "KILL_AFTER_RECORDS": "3"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        _, err = proc.communicate(timeout=400)
        assert proc.returncode == -signal.SIGKILL, err.decode()[-2000:]
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the killed driver's own Ray processes
        except ProcessLookupError:
            pass
        proc.wait()
    before = (run / "trials.jsonl").read_text().splitlines()
    assert len(before) == 3
    (run / "optuna.log").unlink()

    done = subprocess.run(
        [sys.executable, "-m", "tlmsearch", "resume", str(run), "--quiet"], env=env, capture_output=True, timeout=500
    )
    err = done.stderr.decode()
    assert done.returncode == 0, err[-3000:]
    assert "Traceback" not in err and "optuna.log is missing" in err, err[-3000:]
    records = [json.loads(line) for line in (run / "trials.jsonl").read_text().splitlines()]
    assert len(records) == 6 == len({r["trial_id"] for r in records})
    assert (run / "trials.jsonl").read_text().splitlines()[:3] == before
