"""File-system shapes a hostile (or unlucky) user hands the tool: a read-only folder, a symbolic
link loop, a FIFO, a folder where a file belongs, a link to nothing.

`read_only(path)` makes a folder read-only for the block, also for root: root writes through
permission bits (CAP_DAC_OVERRIDE), so when the tests run as root the calling thread drops that
capability (and its two siblings) from its effective set for the block and takes it back after;
the permitted set keeps it, so nothing is lost. Elsewhere it is a plain `chmod`.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
_DAC_CAPS = (1 << 1) | (1 << 2) | (1 << 3)
_CAP_VERSION_3 = 0x20080522


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _set_effective(drop: bool) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    header, data = _Header(_CAP_VERSION_3, 0), (_Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    if drop:
        data[0].effective &= ~_DAC_CAPS
    else:
        data[0].effective |= data[0].permitted & _DAC_CAPS
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


@contextmanager
def read_only(*folders: Path) -> Iterator[None]:
    """Every folder (and the files in it) read-only for the block, for root too."""
    modes: list[tuple[Path, int]] = []
    for folder in folders:
        for path in [folder, *folder.rglob("*")]:
            if path.is_symlink():
                continue
            mode = path.stat().st_mode
            modes.append((path, mode))
            path.chmod(stat.S_IMODE(mode) & ~0o222)
    root = os.geteuid() == 0
    if root:
        _set_effective(drop=True)
    try:
        yield
    finally:
        if root:
            _set_effective(drop=False)
        for path, mode in reversed(modes):
            path.chmod(stat.S_IMODE(mode))


def loop(path: Path) -> Path:
    """`path` made a symbolic link loop (path -> path.loop -> path)."""
    other = path.with_name(path.name + ".loop")
    path.symlink_to(other.name)
    other.symlink_to(path.name)
    return path


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def dangling(path: Path) -> Path:
    path.symlink_to(path.name + ".nowhere")
    return path


def folder(path: Path) -> Path:
    path.mkdir()
    return path
