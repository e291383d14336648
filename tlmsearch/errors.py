"""Exceptions that carry a message meant for a person.

`UserError` marks bad input from a user (a config value, a CLI flag, a file): the CLI prints
its message as one line and exits with status 2, without a traceback. Anything else is a bug
and keeps its traceback. `UserError` subclasses `ValueError`, so library callers may catch
either.

`file_system_message` turns the file-system errors that are the user's to fix (permissions, a
read-only place, a symlink loop, a full disk, a folder where a file belongs) into that same one
line, naming the path and what to do; the CLI applies it to every command.

`failure_reason` is the one line a failed trial's record keeps of the exception it raised.
"""

from __future__ import annotations

import errno
import os
import traceback
from pathlib import Path


class UserError(ValueError):
    """Bad input from a user; the message says what was wrong and what is allowed."""


class ConfigError(UserError):
    """A configuration value is invalid."""


class DataError(UserError):
    """A corpus, tokenizer or data file is missing, unreadable or malformed."""


# errno -> what the file system said (named as a person would) and what to do about it
_FS_ERRORS: dict[int, tuple[str, str]] = {
    errno.EACCES: ("permission denied", "fix its permissions or choose another place"),
    errno.EPERM: ("operation not permitted", "fix its permissions or choose another place"),
    errno.EROFS: ("the file system is read-only", "choose a writable place"),
    errno.ELOOP: ("a symbolic link loop", "fix or remove the link"),
    errno.ENOSPC: ("no space left on the device", "free some space or choose another place"),
    errno.EDQUOT: ("the disk quota is exceeded", "free some space or choose another place"),
    errno.EFBIG: ("the file is too large for the file system", "choose another place"),
    errno.EISDIR: ("a folder where a file belongs", "move the folder away or give a file path"),
    errno.ENOTDIR: ("a file where a folder belongs", "move the file away or give another path"),
    errno.ENAMETOOLONG: ("a name too long for the file system", "choose a shorter path"),
    errno.ENXIO: ("a device or FIFO with no reader, not a regular file", "give a regular file"),
    errno.ENODEV: ("a device, not a regular file", "give a regular file"),
    errno.ETXTBSY: ("a file in use", "wait for it to be released or choose another path"),
}


# the errors a write to an open file (stdout redirected to a full disk, /dev/full) ends in
_OUTPUT_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def file_system_message(exc: BaseException) -> str | None:
    """One line naming the path and what to do for a file-system error that is the user's to fix
    (a permission, a read-only place, a symlink loop, a full disk, a folder where a file belongs,
    a FIFO or device), or None for anything else (a bug keeps its traceback).

    Python 3.11's `Path.resolve()` reports a symlink loop as a `RuntimeError("Symlink loop from
    '<path>'")` rather than an `OSError`; it is recognised too.
    """
    if isinstance(exc, RuntimeError) and str(exc).startswith("Symlink loop from "):
        path = str(exc).removeprefix("Symlink loop from ").strip("'\"")
        what, todo = _FS_ERRORS[errno.ELOOP]
        return f"{path}: {what}; {todo}"
    if not isinstance(exc, OSError) or exc.errno not in _FS_ERRORS:
        return None
    if exc.filename is None:  # a write to a file already open: the output (stdout) on a full disk
        if exc.errno not in _OUTPUT_ERRORS:
            return None
        what, todo = _FS_ERRORS[exc.errno]
        return f"cannot write the output: {what}; {todo}"
    what, todo = _FS_ERRORS[exc.errno]
    path = os.fsdecode(exc.filename)
    if exc.filename2 is not None:
        path = f"{path} -> {os.fsdecode(exc.filename2)}"
    return f"{path}: {what}; {todo}"


def failure_reason(exc: BaseException) -> str:
    """'<Type>: <message> (<file>:<line>)' of an exception a trial raised (its record's reason)."""
    frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" ({Path(frame[0].filename).name}:{frame[0].lineno})" if frame else ""
    return f"{type(exc).__name__}: {exc}{where}"
