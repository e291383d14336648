"""Recorded training speed: seconds per step of earlier runs, keyed by what sets the speed.

A small append-only file, `<cache>/step-rates.jsonl` (the user's cache: `$TLMSEARCH_CACHE`,
else `~/.cache/tlmsearch`), one line per measured run:

    {"key": "3f9c...", "shape": {...}, "s_per_step": 0.031, "overhead_s": 2.4,
     "source": "trial", "when": "2026-11-30T23:10:00+00:00"}

The key is a digest of everything that sets a step's cost: the model (architecture, sizes,
options, the total MLP width; not the per-layer split: every profile of a budget has the
same FLOPs), the tokens of a step (batch, accumulation, sequence), the evaluation cadence
(evaluations are counted in the wall time per step), dtype, device, torch threads,
`torch.compile`, and the machine's name. `shape` keeps the same fields readable.

Who writes: each finished `tlmsearch train` and each ended search/verify/compare trial
(complete or stopped, not failed), from its own wall clock: `s_per_step` is the run's elapsed
seconds at its last evaluation over its steps, `overhead_s` the rest of its wall time (model
build, data, Ray's start of the trial). Trials measured while several share the machine carry
that sharing in their rate, which is what a search with the same concurrency will see.
Who reads: `tlmsearch.costs.estimate`'s callers, through `rate_for`, over the newest `KEEP` lines of
a key. The file is a cache: a damaged line (cut short, not UTF-8, not JSON, a figure that is
not a positive number) is skipped, with one short warning per file and process on stderr; the
file is never rewritten or deleted, and a new line starts on a line of its own even after a
torn one. Nothing here imports torch.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import platform
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tlmsearch.costs.estimate import Rate

RATES_FILE = "step-rates.jsonl"
KEEP = 20  # newest measurements of a key that make its range
# model fields that do not change a step's cost
_IGNORED_MODEL = ("mlp_widths", "init_std", "rope_theta", "norm_eps")
_WARNED: set[Path] = set()  # rate files already reported as damaged in this process
_TRAIN_FIELDS = ("batch_size", "grad_accum", "eval_interval", "eval_windows", "dtype", "compile", "threads")


def rate_shape(model: Mapping[str, Any], train: Mapping[str, Any], device: str) -> dict[str, Any]:
    """The fields that set a step's cost (see the module docstring); `device` is "cpu" or "cuda"."""
    shape = {k: v for k, v in model.items() if k not in _IGNORED_MODEL}
    shape["mlp_total"] = int(sum(model.get("mlp_widths", ())))
    shape.update({k: train.get(k) for k in _TRAIN_FIELDS})
    shape["device"] = device
    shape["host"] = platform.node()
    return shape


def rate_key(shape: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()[:16]


def rates_file(cache_dir: str | Path) -> Path:
    return Path(cache_dir) / RATES_FILE


def record_rate(
    cache_dir: str | Path, shape: Mapping[str, Any], s_per_step: float, overhead_s: float, source: str
) -> bool:
    """Append one measurement (one short write in append mode: concurrent writers do not mix
    lines). Returns False, writing nothing, for a meaningless figure or an unwritable cache."""
    if not (math.isfinite(s_per_step) and s_per_step > 0 and math.isfinite(overhead_s)):
        return False
    line = {
        "key": rate_key(shape),
        "shape": dict(shape),
        "s_per_step": s_per_step,
        "overhead_s": max(0.0, overhead_s),
        "source": source,
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    path = rates_file(cache_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            data = (json.dumps(line, default=str) + "\n").encode()
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":  # after a torn or damaged end
                data = b"\n" + data
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def _lines(path: Path) -> Iterable[dict[str, Any]]:
    """The JSON objects of the file's lines; damaged lines are skipped (see the module docstring)."""
    try:
        data = path.read_bytes()
    except OSError:
        return
    damaged = 0
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            line = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            damaged += 1
            continue
        if isinstance(line, dict):
            yield line
        else:
            damaged += 1
    if damaged and path not in _WARNED:
        _WARNED.add(path)
        print(
            f"warning: {path}: skipped {damaged} damaged line{'s' * (damaged != 1)} "
            "(a cache of measured step times; it is safe to delete)",
            file=sys.stderr,
        )


def _figure(value: Any, default: float | None = None) -> float | None:
    """A finite non-negative number from a line, else `default` (a damaged field)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return default
    return float(value)


def rate_for(cache_dir: str | Path, shape: Mapping[str, Any]) -> Rate | None:
    """The range of the newest `KEEP` recorded rates of `shape` on this machine, or None."""
    key = rate_key(shape)
    found: list[tuple[float, float]] = []
    for line in _lines(rates_file(cache_dir)):
        s_per_step = _figure(line.get("s_per_step"))
        if line.get("key") == key and s_per_step:
            found.append((s_per_step, _figure(line.get("overhead_s"), 0.0) or 0.0))
    found = found[-KEEP:]
    if not found:
        return None
    n = len(found)
    return Rate.measured(
        [s for s, _ in found],
        [o for _, o in found],
        source=f"measured in {n} earlier run{'s' * (n != 1)} of this shape",
    )


def run_rate(metrics: Mapping[str, Any], steps: int, wall_s: float) -> tuple[float, float] | None:
    """(seconds per step, start-up seconds) of one ended run from its last evaluation's
    `elapsed_s` and its total wall time (0: unknown); None when they say nothing, or when the
    wall time is shorter than the training time (a run resumed over several sessions)."""
    elapsed = metrics.get("elapsed_s")
    if not isinstance(elapsed, int | float) or steps < 1 or not elapsed > 0 or 0 < wall_s < elapsed:
        return None
    return float(elapsed) / steps, max(0.0, wall_s - float(elapsed))
