"""Helpers shared by the search benchmarks: the machine they ran on, the small trial model,
timing, and printing ratios.

Benchmarks are run from the repository root as modules (`python -m bench.bench_parallel`)
and print ratios measured side by side in one run: the 2 CPU cores of a development machine
are often shared, so absolute times are noise and only interleaved ratios are trusted.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
DATA_DIR = BENCH_DIR / "data"

# The model every search benchmark trains: small enough that a real trial lasts seconds on one
# CPU core, large enough (6 layers) that width profiles differ. Shape fields of a tlmsearch
# Preset; `SearchConfig(preset="cpu-s", model=SMALL_SHAPE)` trains exactly this shape.
SMALL_SHAPE: dict[str, int] = {
    "d_model": 64,
    "n_layers": 6,
    "n_heads": 2,
    "seq_len": 64,
    "base_width": 192,
    "multiple_of": 8,
}


def small_preset() -> Any:
    """The `Preset` of `SMALL_SHAPE` (named "bench-small")."""
    from tlmsearch.configs.presets import preset

    return preset("cpu-s").replace(name="bench-small", **SMALL_SHAPE)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


def machine_info() -> dict[str, Any]:
    """Where and when a benchmark ran: CPU, cores, load, versions, git commit."""
    from tlmsearch.rundir import environment

    env = environment()
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "cores": env["host"]["cpu_affinity"] or env["host"]["cpu_count"],
        "load_avg_1m_5m_15m": [round(x, 2) for x in load_average()],
        "platform": env["host"]["platform"],
        "versions": env["versions"],
        "git": env["git"],
    }


def machine_line(info: dict[str, Any]) -> str:
    v = info["versions"]
    git = info.get("git") or {}
    commit = (git.get("commit") or "?")[:8] + ("+dirty" if git.get("dirty") else "")
    load = "/".join(f"{x:.2f}" for x in info["load_avg_1m_5m_15m"])
    return (
        f"machine: {info['cpu']}, {info['cores']} cores, load {load} (1/5/15 min) | "
        f"python {v.get('python')}, torch {v.get('torch')}, ray {v.get('ray')}, optuna {v.get('optuna')} | "
        f"tlmsearch {commit} | {info['date']}"
    )


def print_header(title: str, info: dict[str, Any] | None = None) -> dict[str, Any]:
    info = info or machine_info()
    print(f"== {title}")
    print(machine_line(info))
    return info


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def quartiles(xs: Sequence[float]) -> tuple[float, float]:
    """(25th, 75th) percentiles (inclusive method); the value itself for one sample."""
    if not xs:
        return (float("nan"), float("nan"))
    if len(xs) == 1:
        return (float(xs[0]), float(xs[0]))
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return (q[0], q[2])


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    """A plain text table (right-aligned columns); floats shown with 3 significant decimals."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) < 1000 else f"{v:.0f}"
        return str(v)

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def save_result(name: str, result: dict[str, Any], out: str | Path | None = None) -> Path:
    """Write a benchmark's figures as JSON (default `bench/data/<name>-latest.json`)."""
    path = Path(out) if out else DATA_DIR / f"{name}-latest.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    return path
