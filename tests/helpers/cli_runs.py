"""What the killed-and-resumed CLI search tests share: reading a run's records, and waiting
for a driver subprocess to record its first trial."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path


def read_lines(path: Path) -> list[dict]:
    """The JSON lines of `path` (e.g. a run's trials.jsonl); [] while it does not exist."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_for_first_record(proc: subprocess.Popen, records: Path, timeout: float = 240, poll: float = 0.2) -> None:
    """Block until `records` holds a line; fail with the driver's stderr if it exits first."""
    deadline = time.time() + timeout
    while not read_lines(records):
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        assert time.time() < deadline, "no trial ended in time"
        time.sleep(poll)
