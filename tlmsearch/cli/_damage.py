"""`status`, `report` and `export` say when they skipped damaged lines of `trials.jsonl`, and
`report` and `export` refuse a read-only run directory up front, naming the flag that writes
elsewhere (the commands that only read never need to write there)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tlmsearch.errors import UserError
from tlmsearch.rundir.records import damage_note


@contextmanager
def damage_noted(run_dir: str) -> Iterator[None]:
    """Print the damage note (if any) on stderr after the block; a `UserError` raised inside
    carries the note in its own line instead, so a refusal stays one line."""
    from tlmsearch.rundir.io import run_file_problems
    from tlmsearch.rundir.layout import RUN_FILES, TRIALS

    note = damage_note(run_dir)  # names a trials.jsonl that is not a file itself
    others = tuple(name for name in RUN_FILES if name != TRIALS)
    problems = run_file_problems(run_dir, others) if os.path.isdir(run_dir) else []
    if problems:  # a file this command may not even read: said, not refused
        more = f"; and {len(problems) - 1} more" if len(problems) > 1 else ""
        extra = f"warning: {problems[0]}{more}"
        note = f"{note}; {extra.removeprefix('warning: ')}" if note else extra
    try:
        yield
    except UserError as exc:
        if note:
            raise type(exc)(f"{exc} ({note.removeprefix('warning: ')})") from None
        raise
    if note:
        print(note, file=sys.stderr)


def writable_run_dir(run_dir: str, elsewhere: str) -> None:
    """Refuse, in one line naming `elsewhere` (the flag that writes somewhere else), a run
    directory this command would write into but cannot (read-only, or not ours); a missing or
    odd run directory is left to the command's own message."""
    if os.path.isdir(run_dir) and not _can_write(run_dir):
        raise UserError(f"run directory {run_dir} is read-only (cannot write into it); use {elsewhere} instead")


def _can_write(folder: str) -> bool:
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".tlmsearch-probe-", dir=folder)
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True
