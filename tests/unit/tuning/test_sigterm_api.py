"""SIGTERM through the Python API (a job scheduler stopping a script that calls
`tlmsearch.search(...)`) ends the process as the command line does: the search stops as for a
Ctrl-C, then one line on stderr saying what stopped and how to resume it, exit status 143; no
traceback, no raw Ray error (issue 50). The fast case stops inside the call without Ray (the
search's first step sends the signal); the slow one stops a real local search while it trains."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHILD = r"""
import os, signal, sys, time
import tlmsearch
from tlmsearch.tuning import runner

def searching(cfg, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)  # the scheduler's stop, while the call runs
    time.sleep(5)
    raise AssertionError("not stopped")

runner.search = searching
tlmsearch.search({"preset": "tiny", "trials": 2, "name": "api", "runs_dir": sys.argv[1]}, progress=False, yes=True)
print("returned")
"""


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_sigterm_inside_an_api_call_ends_in_one_line_and_143(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode in (143, 130), (out.returncode, out.stderr[-2000:])
    assert "Traceback" not in out.stderr and "returned" not in out.stdout, out.stderr[-2000:]
    lines = _lines(out.stderr)
    assert len(lines) == 1 and lines[0].startswith("tlmsearch: stopped by SIGTERM"), out.stderr[-2000:]


def test_a_ctrl_c_stays_the_callers_keyboard_interrupt() -> None:
    from tlmsearch import api
    from tlmsearch.tuning import interrupts

    @api._ends_cleanly_on_sigterm
    def cut() -> None:
        raise KeyboardInterrupt("search interrupted")

    with pytest.raises(KeyboardInterrupt):
        cut()
    assert not interrupts.terminated()


REAL = r"""
import sys
import tlmsearch
tlmsearch.search({"preset": "tiny", "trials": 6, "scheduler": "none", "name": "api", "runs_dir": sys.argv[1],
                  "cpus_per_trial": 2,
                  "train": {"steps": 400, "eval_interval": 100, "batch_size": 4, "eval_windows": 4, "warmup_steps": 2},
                  "data": {"corpus": "pydoc"}}, progress=False, yes=True)
print("returned")
"""


@pytest.mark.slow
def test_sigterm_stops_a_real_api_search_cleanly(tmp_path: Path) -> None:
    env = {**os.environ, "TLMSEARCH_CACHE": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", REAL, str(tmp_path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.time() + 400
        while not (tmp_path / "api" / "search.yaml").is_file():
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.time() < deadline, "the search never started"
            time.sleep(0.05)
        time.sleep(3)  # a trial training
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode in (143, 130), (proc.returncode, err[-3000:])
    assert "Traceback" not in err and "GCS" not in err and "returned" not in out, err[-3000:]
    lines = _lines(err)
    assert lines and lines[-1].startswith("tlmsearch: stopped by SIGTERM"), err[-3000:]
    assert f"tlmsearch resume {tmp_path / 'api'}" in lines[-1], err[-3000:]
