"""`status`, `report` and `export` say when they skipped damaged lines of `trials.jsonl`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tlmsearch.errors import UserError
from tlmsearch.rundir.records import damage_note


@contextmanager
def damage_noted(run_dir: str) -> Iterator[None]:
    """Print the damage note (if any) on stderr after the block; a `UserError` raised inside
    carries the note in its own line instead, so a refusal stays one line."""
    note = damage_note(run_dir)
    try:
        yield
    except UserError as exc:
        if note:
            raise type(exc)(f"{exc} ({note.removeprefix('warning: ')})") from None
        raise
    if note:
        print(note, file=sys.stderr)
