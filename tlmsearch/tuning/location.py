"""Which run directory the objects Tune unpickles belong to: nothing absolute is pickled.

Tune pickles the search's callbacks (in `tune/tuner.pkl`) and its searcher (in
`tune/searcher-state-*.pkl`). Had they kept the run directory's absolute path, a copied run
would write into the original and a moved one would recreate the old path. So they pickle no
path at all: the driver binds the directory it runs in (`bound_to`) around building, restoring
and fitting a Tuner, and the unpickled objects ask `run_dir()` for it.

The binding is per thread (a context variable): a study runs several Tuners at once, one per
thread (`tlmsearch.tuning.overlap`), each in its own run directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

_RUN_DIR: ContextVar[Path | None] = ContextVar("tlmsearch_run_dir", default=None)


@contextmanager
def bound_to(run_dir: str | Path) -> Iterator[Path]:
    """Bind `run_dir` (made absolute now, in this process only) for the duration of the block."""
    bound = Path(run_dir).resolve()
    token = _RUN_DIR.set(bound)
    try:
        yield bound
    finally:
        _RUN_DIR.reset(token)


def run_dir() -> Path:
    """The run directory the driver bound (an internal error when none is bound)."""
    bound = _RUN_DIR.get()
    if bound is None:
        raise RuntimeError("no run directory bound: build, restore and fit inside location.bound_to(run_dir)")
    return bound
