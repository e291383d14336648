"""What the killed-and-resumed CLI search tests share: reading a run's records, waiting for a
driver subprocess to record its first trial, and killing the driver as a crash would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the driver's whole process group (its local Ray too, as a crash leaves it) and reap it.

    The driver must have been started with `start_new_session=True`, so its group is its own."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


@contextmanager
def reaped(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """Leave no driver behind: on the way out (a failed assertion included), kill its group if it still runs."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def tiny_search(runs: Path, trials: int = 2) -> Path:
    """A finished search of `trials` trials of the tiny Transformer on pydoc (6 steps, 2 baselines)."""
    import tlmsearch
    from tlmsearch.configs.base import DataConfig, TrainConfig
    from tlmsearch.configs.search import SearchConfig

    cfg = SearchConfig(
        name="tiny",
        runs_dir=str(runs),
        arch="transformer",
        preset="tiny",
        space="knots",
        sampler="random",
        scheduler="none",
        trials=trials,
        noise_seeds=0,
        max_concurrent=2,
        baselines=("uniform", "cosine:start=1.5,end=0.5"),
        train=TrainConfig(steps=6, warmup_steps=2, eval_interval=3, eval_windows=4, batch_size=4),
        data=DataConfig(corpus="pydoc"),
    )
    return tlmsearch.search(cfg, progress=False).run_dir
