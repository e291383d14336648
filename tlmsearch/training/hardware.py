"""Device and thread helpers, and this machine's measured matmul peak (for MFU).

The peak is measured once per (device, dtype, thread count, torch version) with square
matmuls and cached in `<cache>/hardware.json`; MFU = achieved training FLOP/s / that peak.
A measured peak is the honest reference on a CPU, whose nominal figures are rarely reached.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch

from tlmsearch.errors import ConfigError

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def resolve_device(device: str) -> torch.device:
    """ "auto" -> cuda when available, else cpu; asking for cuda without one is a ConfigError."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device='cuda' but no CUDA device is available; use device='cpu' or 'auto'")
    return torch.device(device)


def assigned_cuda_index(gpu_ids: Sequence[str], visible: str | None) -> int:
    """torch's index of the first GPU Ray assigned (`gpu_ids`, Ray's ids) given the process's
    CUDA_VISIBLE_DEVICES (`visible`).

    Ray normally sets CUDA_VISIBLE_DEVICES to exactly the assigned GPUs, so torch numbers them
    from 0 and the answer is 0. Where Ray is told not to (RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES)
    every GPU stays visible and torch's index is Ray's id; where the variable lists other
    devices, the assigned id's position in it.
    """
    if not gpu_ids:
        return 0
    first = str(gpu_ids[0]).strip()
    if visible is None or not visible.strip():
        return int(first) if first.isdigit() else 0
    listed = [v.strip() for v in visible.split(",")]
    return listed.index(first) if first in listed else 0


def torch_dtype(name: str) -> torch.dtype:
    return _DTYPES[name]


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    return platform.processor() or platform.machine() or "cpu"


@contextlib.contextmanager
def thread_count(threads: int) -> Iterator[None]:
    """Use `threads` torch intra-op threads inside the block (0 = leave as is), then restore."""
    if threads <= 0:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _cache_file(cache_dir: Path | None) -> Path:
    if cache_dir is None:
        env = os.environ.get("TLMSEARCH_CACHE")
        cache_dir = Path(env).expanduser() if env else Path.home() / ".cache" / "tlmsearch"
    return cache_dir / "hardware.json"


def _key(device: torch.device, dtype: str) -> str:
    threads = torch.get_num_threads() if device.type == "cpu" else 0
    return f"{device.type}|{device_name(device)}|{dtype}|threads={threads}|torch={torch.__version__}"


def measure_matmul_peak(device: torch.device, dtype: str, *, size: int = 2048, seconds: float = 0.5) -> float:
    """Best achieved FLOP/s of a size x size matmul on `device` in `dtype` (no caching)."""
    a = torch.randn(size, size, device=device).to(_DTYPES[dtype])
    b = torch.randn(size, size, device=device).to(_DTYPES[dtype])
    flops = 2.0 * size**3
    best = 0.0
    torch.matmul(a, b)  # warm up
    start = time.perf_counter()
    runs = 0
    while runs < 3 or (time.perf_counter() - start < seconds and runs < 50):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        torch.matmul(a, b)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = max(best, flops / (time.perf_counter() - t0))
        runs += 1
    return best


def matmul_peak(device: torch.device, dtype: str, cache_dir: Path | None = None, *, refresh: bool = False) -> float:
    """Measured peak FLOP/s for (device, dtype, current thread count), cached on disk.

    A machine shared with other work measures low; `refresh=True` measures again and keeps the
    best figure ever measured (a peak only rises with better measurements).
    """
    path = _cache_file(cache_dir)
    key = _key(device, dtype)
    cache: dict[str, float] = {}
    with contextlib.suppress(OSError, ValueError):
        cache = json.loads(path.read_text())
    if key in cache and not refresh:
        return float(cache[key])
    peak = measure_matmul_peak(device, dtype)
    with contextlib.suppress(OSError, ValueError):  # re-read: parallel trials may have added keys
        cache = json.loads(path.read_text())
    peak = max(peak, float(cache.get(key, 0.0)))
    cache[key] = peak
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=2, sort_keys=True) + "\n")
        tmp.replace(path)
    return peak
