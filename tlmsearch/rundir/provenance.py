"""`environment.json` (provenance): what is needed to trust or reproduce a run.

Seeds, the versions of python, torch, numpy, optuna, ray and tlmsearch (read from package
metadata: nothing heavy is imported), the git commit of the source tree when there is one (and
whether it had local changes), the host's CPU count and the device.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from tlmsearch.rundir.io import write_json
from tlmsearch.rundir.layout import ENVIRONMENT

PACKAGES = ("torch", "numpy", "optuna", "ray", "tlmsearch")


def environment(seeds: Mapping[str, Any] | None = None, device: str | None = None) -> dict[str, Any]:
    """What ran: seeds, versions, git commit, host and device (see the module docstring)."""
    versions = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None  # type: ignore[assignment]
    return {
        "seeds": dict(seeds or {}),
        "versions": versions,
        "git": git_info(),
        "host": {
            "platform": platform.platform(),
            "machine": platform.machine(),
            "cpu_count": os.cpu_count(),
            "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        },
        "device": device if device is not None else _device(),
        "argv": list(sys.argv),
        "created": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def write_environment(run_dir: str | Path, seeds: Mapping[str, Any] | None = None, device: str | None = None) -> Path:
    return write_json(Path(run_dir) / ENVIRONMENT, environment(seeds, device))


def git_info() -> dict[str, Any] | None:
    """Commit and dirty flag of the git tree holding the tlmsearch sources, if any."""
    src = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=src, capture_output=True, text=True, timeout=5, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def _device() -> str:
    if "torch" not in sys.modules:  # don't import torch just to describe the host
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return f"cpu ({torch.get_num_threads()} threads)"
