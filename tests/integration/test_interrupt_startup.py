"""A Ctrl-C is honoured from a search's first instruction to its last (issue 31).

Ray Tune installs its SIGINT handler when a Tuner fits and leaves it installed after the fit
returns, so a Ctrl-C between two fits (right after the noise floor's last record, before the
search's own Tuner starts) only set the finished fit's stop flag, and the search trained every
trial and exited 0. Each case starts `tlmsearch search` in a process of its own (with its own
local Ray), sends SIGINT the moment the run directory shows the chosen point, and expects exit
status 130 with the resume line, and the search's trials not all trained.
Slow: a Ray start and a few tiny trials per case on 2 cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ARGS = [
    "search", "--preset", "tiny", "--corpus", "pydoc", "--steps", "20", "--eval-interval", "10",
    "--batch-size", "4", "--train", "eval_windows=4", "--train", "warmup_steps=2", "--trials", "4",
    "--noise-seeds", "3", "--max-concurrent", "2", "--scheduler", "none", "--quiet",
]  # fmt: skip
TRIALS = 4


def _kinds(run: Path) -> list[str]:
    path = run / "trials.jsonl"
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line)["kind"])
        except (ValueError, KeyError):
            continue  # a line being written
    return out


def _interrupt_when(tmp_path: Path, ready: Callable[[Path], bool]) -> tuple[int, str, list[str]]:
    run = tmp_path / "runs" / "cut"
    cmd = [sys.executable, "-m", "tlmsearch", *ARGS, "--runs-dir", str(tmp_path / "runs"), "--name", "cut"]
    env = {**os.environ, "TLMSEARCH_CACHE": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        deadline = time.time() + 400
        while not ready(run):
            assert proc.poll() is None, f"the search ended before the point: {proc.communicate()[1][-3000:]}"
            assert time.time() < deadline, "the search never reached the point"
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err, _kinds(run)


@pytest.mark.slow
@pytest.mark.parametrize(
    "point",
    [
        pytest.param(lambda run: (run / "search.yaml").is_file(), id="search.yaml written"),
        pytest.param(lambda run: _kinds(run).count("noise") >= 2, id="second noise-floor record"),
    ],
)
def test_a_ctrl_c_at_start_up_stops_the_search_with_the_resume_line(
    tmp_path: Path, point: Callable[[Path], bool]
) -> None:
    code, err, kinds = _interrupt_when(tmp_path, point)
    searched = sum(k in ("baseline", "sampled") for k in kinds)
    assert code == 130, f"exit {code}, {searched} of {TRIALS} trials trained: {err[-3000:]}"
    assert searched < TRIALS, err[-3000:]
    assert f"resume with: tlmsearch resume {tmp_path / 'runs' / 'cut'}" in err or not kinds, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
