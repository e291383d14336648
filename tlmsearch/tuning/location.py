"""Which run directory the objects Tune unpickles belong to: nothing absolute is pickled.

Tune pickles the search's callbacks (in `tune/tuner.pkl`) and its searcher (in
`tune/searcher-state-*.pkl`). Had they kept the run directory's absolute path, a copied run
would write into the original and a moved one would recreate the old path. So they pickle no
path at all: the driver binds the directory it runs in (`bound_to`) around building, restoring
and fitting a Tuner, and the unpickled objects ask `run_dir()` for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_RUN_DIR: Path | None = None


@contextmanager
def bound_to(run_dir: str | Path) -> Iterator[Path]:
    """Bind `run_dir` (made absolute now, in this process only) for the duration of the block."""
    global _RUN_DIR
    previous, _RUN_DIR = _RUN_DIR, Path(run_dir).resolve()
    try:
        yield _RUN_DIR
    finally:
        _RUN_DIR = previous


def run_dir() -> Path:
    """The run directory the driver bound (an internal error when none is bound)."""
    if _RUN_DIR is None:
        raise RuntimeError("no run directory bound: build, restore and fit inside location.bound_to(run_dir)")
    return _RUN_DIR
