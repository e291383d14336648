"""The live line in an 80-column terminal stays on one row: a whole (tiny) search, its noise
floor first, in a tmux pane of 80 columns, the pane captured while it runs. Every live line fits in 79 columns, and
its redraws happen in place: the pane's history ends with far fewer live rows than the
distinct pictures the line showed (a line that wrapped would leave a row behind at every redraw)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")]

# the whole line ("search qs  0m05s | 3/4 ended: ...") or, narrower than the pane, the most
# important fields first ("search qs | 3/4 ended | best 5.1234 | 12s left | ...")
LIVE = re.compile(r"^search \S+ +(\S+ )?\| \d+/\d+ ended")
COLUMNS = 80


def _capture(session: str) -> str:
    out = subprocess.run(["tmux", "capture-pane", "-p", "-S", "-", "-t", session], capture_output=True, text=True)
    return out.stdout


def test_the_live_line_stays_on_one_row_in_an_80_column_pane(tmp_path: Path) -> None:
    session = f"tlm-{uuid.uuid4().hex[:8]}"
    env = {k: os.environ[k] for k in ("TLMSEARCH_CACHE", "PYTHONPATH", "PATH", "HOME") if k in os.environ}
    env["OMP_NUM_THREADS"] = "1"
    search = [
        sys.executable, "-m", "tlmsearch", "search", "--preset", "tiny", "--corpus", "pydoc", "--trials", "4",
        "--steps", "12", "--noise-seeds", "3", "--runs-dir", str(tmp_path), "--name", "qs",
    ]  # fmt: skip
    command = (
        f"cd {shlex.quote(str(tmp_path))} && env -u COLUMNS -u LINES "
        + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        + " "
        + shlex.join(search)
        + "; echo EXIT=$?; sleep 120"
    )
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(COLUMNS), "-y", "30", command], check=True)
    snapshots: list[str] = []
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            snapshots.append(_capture(session))
            if "EXIT=" in snapshots[-1]:
                break
            time.sleep(0.2)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    final = snapshots[-1]
    assert "EXIT=0" in final, final
    pictures = {row.rstrip() for pane in snapshots for row in pane.splitlines() if LIVE.match(row)}
    assert len(pictures) >= 4, final  # the line was drawn, and redrawn as trials ran and ended
    assert all(len(row) < COLUMNS for row in pictures), [r for r in pictures if len(r) >= COLUMNS]
    assert any(" best " in row and " left" in row for row in pictures), pictures  # best so far and time left shown
    left = [row for row in final.splitlines() if LIVE.match(row)]
    assert 1 <= len(left) <= 4 < len(pictures), final  # one row per phase, redrawn in place
