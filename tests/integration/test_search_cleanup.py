"""A search leaves no trial folders and no Ray session folder behind, finished or interrupted.

Each search runs as its own process (its own local Ray) with TMPDIR pointing into the test's
folder, so the trial folders it makes can be watched without confusing them with those of
other processes on the machine; its Ray session folder is the one whose name ends in its pid and
that was not there before it started (pids wrap: a folder left in /tmp/ray by an older process
of the same pid is not this search's).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TINY = [
    "--preset", "tiny", "--model", "n_layers=4", "--corpus", "pydoc", "--eval-interval", "10",
    "--warmup-steps", "5", "--batch-size", "8", "--eval-windows", "8", "--trials", "2",
    "--scheduler", "none", "--cpus-per-trial", "1", "--threads", "1", "--noise-seeds", "0",
]  # fmt: skip


@pytest.fixture()
def short_tmp(tmp_path: Path) -> Iterator[Path]:
    """A TMPDIR with a short path (Ray's socket paths under it must stay within 107 bytes)."""
    tmp = Path(tempfile.mkdtemp(prefix="tls-"))
    (tmp_path / "tmp").symlink_to(tmp)
    yield tmp
    shutil.rmtree(tmp, ignore_errors=True)


def _sessions(tmp_path: Path) -> set[str]:
    tmp = (tmp_path / "tmp").resolve()
    return {str(p) for p in [*Path("/tmp/ray").glob("session_*"), *tmp.glob("ray/session_*")]}


def _search(tmp_path: Path, name: str, steps: int) -> subprocess.Popen[str]:
    (tmp_path / "sessions_before.txt").write_text("\n".join(sorted(_sessions(tmp_path))))
    tmp = (tmp_path / "tmp").resolve()
    env = {**os.environ, "TMPDIR": str(tmp), "TLMSEARCH_CACHE": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "tlmsearch", "search", *TINY, "--steps", str(steps), "--name", name]
    cmd.append("--yes")  # the interrupted search's 100,000 steps are priced past 12 h on a loaded machine
    return subprocess.Popen(
        [*cmd, "--runs-dir", str(tmp_path / "runs")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _leftovers(tmp_path: Path, pid: int) -> list[str]:
    tmp = (tmp_path / "tmp").resolve()
    trial_dirs = [str(p) for p in tmp.rglob("tlmsearch-*")]
    before = set((tmp_path / "sessions_before.txt").read_text().splitlines())
    sessions = sorted(s for s in _sessions(tmp_path) - before if s.endswith(f"_{pid}"))
    return trial_dirs + sessions


def test_a_finished_search_leaves_nothing_behind(tmp_path: Path, short_tmp: Path) -> None:
    proc = _search(tmp_path, "done", steps=20)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert _leftovers(tmp_path, proc.pid) == []
    assert "Tuner.restore" not in out + err


def test_an_interrupted_search_leaves_nothing_behind_and_says_how_to_resume(tmp_path: Path, short_tmp: Path) -> None:
    """Interrupted once both trials have reported (each has a checkpoint): Tune's clean-up marks
    them TERMINATED with their last result, and they were once recorded as ended from that
    ("stopped early"), so the search ended with exit 0 and no resume hint."""
    proc = _search(tmp_path, "cut", steps=100_000)
    deadline = time.monotonic() + 300
    tune = tmp_path / "runs" / "cut" / "tune"
    while len({p.parent for p in tune.glob("trial_*/checkpoint_*")}) < 2:  # both trials are training
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert f"resume with: tlmsearch resume {tmp_path / 'runs' / 'cut'}" in err
    assert "Tuner.restore" not in out + err and "Stop signal received" not in out + err
    records = tmp_path / "runs" / "cut" / "trials.jsonl"
    assert not records.exists() or not records.read_text().strip()  # no trial ended: none recorded
    assert _leftovers(tmp_path, proc.pid) == []
