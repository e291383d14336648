"""What the killed-and-resumed CLI search tests share: reading a run's records, waiting for a
driver subprocess to record its first trial, and killing the driver as a crash would; and the
verify tests' finished tiny search, trained once a process and handed out as copies."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import tempfile
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
    """SIGKILL the driver's whole process group (its local Ray too, as a crash leaves it), reap
    it, and end what of its session outlives the group (see `end_session`).

    The driver must have been started with `start_new_session=True`, so its group is its own;
    a driver that has already exited is reaped and what it left of its group and session ended."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # nothing of the group left
        pass
    proc.wait(timeout=60)
    end_session(proc.pid)


def _session_of(pid: int) -> tuple[int, str] | None:
    """(session id, state) of a process from /proc/PID/stat; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp session ...
    return int(fields[3]), fields[0]


def end_session(sid: int, timeout: float = 60) -> None:
    """SIGKILL every live process of session `sid` and wait until none is left.

    A driver started with `start_new_session=True` leads its own session; Ray's trial workers
    stay in it but each in a process group of its own, so a SIGKILL of the driver's group leaves
    them running for a moment (until they notice that their raylet is gone), still able to write
    a checkpoint. Once this returns nothing of the killed search can write any more: the run
    directory is as a crash of the whole machine's share of the search would leave it."""
    deadline = time.time() + timeout
    while True:
        live = []
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            found = _session_of(pid)
            if found is not None and found[0] == sid and found[1] not in ("Z", "X"):
                live.append(pid)
        if not live:
            return
        assert time.time() < deadline, f"processes of session {sid} outlived SIGKILL: {live}"
        for pid in live:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


@contextmanager
def reaped(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """Leave no driver behind: on the way out (a failed assertion included), kill its group if it still runs."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            kill_group(proc)


_FINISHED: dict[int, Path] = {}  # trials -> this process's pristine finished tiny search


def tiny_search(runs: Path, trials: int = 2) -> Path:
    """A finished search of `trials` trials of the tiny Transformer with 4 layers on pydoc (6 steps,
    2 baselines), as `runs/tiny` (at tiny's own 2 layers cosine and linear 1.5 -> 0.5 are one model,
    which verify refuses).

    The search trains once per process and `trials` (a folder removed when the process exits);
    every later call gets a copy of that finished run directory, which the tests then verify,
    report or damage as their own. A copy is a whole run (copied and moved runs resume in place:
    integration/test_resume_kill.py), so only the training is shared, several seconds a call."""
    if trials not in _FINISHED:
        home = Path(tempfile.mkdtemp(prefix="tlm-tiny-"))
        atexit.register(shutil.rmtree, home, ignore_errors=True)
        _FINISHED[trials] = _search_tiny(home, trials)
    run = runs / "tiny"
    shutil.copytree(_FINISHED[trials], run, symlinks=True)
    return run


def _search_tiny(runs: Path, trials: int) -> Path:
    import tlmsearch
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.core.base import DataConfig, TrainConfig

    cfg = SearchConfig(
        name="tiny",
        runs_dir=str(runs),
        arch="transformer",
        preset="tiny",
        model={"n_layers": 4},
        space="knots",
        sampler="random",
        scheduler="none",
        trials=trials,
        noise_seeds=0,
        max_concurrent=1,  # one trial (one Ray worker) at a time: less start-up for the same records
        baselines=("uniform", "cosine:start=1.5,end=0.5"),
        train=TrainConfig(steps=6, warmup_steps=2, eval_interval=3, eval_windows=4, batch_size=4),
        data=DataConfig(corpus="pydoc"),
    )
    return tlmsearch.search(cfg, progress=False).run_dir
