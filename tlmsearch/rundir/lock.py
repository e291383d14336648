"""One writer per run directory: `search` and `resume` hold an exclusive lock while they run.

Two drivers on one directory would both append records and both drive the Optuna journal and
Tune's state; the second is refused in one line instead. The lock is an `flock` on
`<run>/.lock`, so the kernel drops it when its process ends, however it ends (a SIGKILL leaves
no stale lock behind); a holder that ends normally also removes the file. The file holds the
holder's pid and host, for the message only.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tlmsearch.errors import ConfigError

LOCK_FILE = ".lock"


def _same_file(fd: int, path: Path) -> bool:
    """Whether `path` still names the file open as `fd` (an ending holder unlinks it)."""
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


@contextmanager
def run_lock(run_dir: str | Path) -> Iterator[None]:
    """Hold the run directory's lock for the duration of the block (ConfigError when taken).

    The lock file is removed when the block ends (a SIGKILL leaves it, unlocked). A process
    that opened the file just before its holder removed it locks a file no longer in the
    directory; it notices (`_same_file`) and opens the new one instead."""
    import fcntl

    path = Path(run_dir) / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            holder = Path(path).read_text(errors="replace").strip() or "another process"
            raise ConfigError(
                f"run directory {run_dir} is in use by {holder}; wait for it to end (or stop it) and retry"
            ) from None
        if _same_file(fd, path):
            break
        os.close(fd)  # removed by the holder that just ended: lock the file that names the lock now
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        yield
    finally:
        try:
            if _same_file(fd, path):
                path.unlink()  # still held: no other process can be holding this file
        except OSError:
            pass  # a read-only directory keeps it: harmless, unlocked once closed
        os.close(fd)  # closing drops the lock


def lock_held(run_dir: str | Path) -> bool:
    """Whether a process holds the run directory's lock now (False when it has no lock file)."""
    import fcntl

    path = Path(run_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the lock taken to test it
    return False
