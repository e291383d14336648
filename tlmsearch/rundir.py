"""Run directories shared by `tlmsearch train` and `tlmsearch search`.

    run = create_run_dir("runs", name=None, prefix="train")   # runs/train-20261129-171500/
    write_config(run, {"model": ..., "train": ..., "data": ...})  # runs/<name>/config.yaml
    write_environment(run, seeds={"seed": 0})                     # runs/<name>/environment.json
    append_jsonl(run / "metrics.jsonl", {...}); write_json(run / "summary.json", {...})

`environment.json` records what is needed to trust or reproduce a run: seeds, the versions of
python, torch, numpy, optuna, ray and tlmsearch (read from package metadata, nothing heavy is
imported), the git commit of the source tree when there is one (and whether it had local
changes), the host's CPU count and the device. Writes are atomic (temporary file + rename).
No torch import here.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from tlmsearch.errors import ConfigError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
PACKAGES = ("torch", "numpy", "optuna", "ray", "tlmsearch")


def default_name(prefix: str = "run") -> str:
    return f"{prefix}-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ConfigError(
            f"run name {name!r} is not allowed; use letters, digits, '.', '_' and '-' (not starting with . - _)"
        )
    return name


def create_run_dir(
    runs_dir: str | Path, name: str | None = None, *, prefix: str = "run", exist_ok: bool = False
) -> Path:
    """Create `runs_dir/name` (a unique timestamped name when `name` is None) and return it.

    An explicit name that already exists is a `ConfigError` unless `exist_ok`; a default name
    gets a `-2`, `-3`, ... suffix instead.
    """
    root = Path(runs_dir)
    root.mkdir(parents=True, exist_ok=True)
    if name is not None:
        path = root / check_name(name)
        if path.exists() and not exist_ok:
            raise ConfigError(f"run directory {path} already exists; choose another name")
        path.mkdir(exist_ok=True)
        return path
    base = default_name(prefix)
    for i in range(1, 1000):
        path = root / (base if i == 1 else f"{base}-{i}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise ConfigError(f"cannot find a free run name under {root} for {base}")


def write_json(path: str | Path, data: Any) -> Path:
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=_plain) + "\n")
    tmp.replace(path)
    return path


def append_jsonl(path: str | Path, record: Mapping[str, Any]) -> None:
    with open(path, "a") as fh:
        fh.write(json.dumps(dict(record), default=_plain) + "\n")


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_config(run_dir: str | Path, sections: Mapping[str, Any], filename: str = "config.yaml") -> Path:
    """Write the resolved config (sections of plain data or `Config` objects) as YAML or JSON."""
    import yaml

    plain = {k: (v.to_dict() if hasattr(v, "to_dict") else v) for k, v in sections.items()}
    path = Path(run_dir) / filename
    text = yaml.safe_dump(plain, sort_keys=False) if path.suffix in (".yaml", ".yml") else json.dumps(plain, indent=2)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return path


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


def write_environment(
    run_dir: str | Path, seeds: Mapping[str, Any] | None = None, device: str | None = None
) -> Path:
    return write_json(Path(run_dir) / "environment.json", environment(seeds, device))


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


def _plain(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | set):
        return list(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
