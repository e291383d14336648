"""Shared by the whole suite: no Ray session outlives the test run, and no test writes the
user's cache.

Ray is started at most once per run where possible (see integration/conftest.py) and kept
between modules, as the CLI keeps it for the life of its process; it is shut down here, once,
when the session ends. Shared helpers live in tests/helpers (on sys.path via pyproject's
`pythonpath`); the rule for what goes where is in tests/README.md.

The cache (`$TLMSEARCH_CACHE`, else ~/.cache/tlmsearch: prepared corpora, the matmul peak,
the measured step rates that estimates read) is the user's: for the whole session it points
at a temporary folder, set before any test runs, so trials, `tlmsearch train` and Ray workers
started by the tests (they inherit the environment) record their rates there. Tests that want
a cache of their own still set one with monkeypatch.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from session_cache import SessionCache

# Pytest rewrites the asserts of every test module it collects (an AST pass over some 170 files,
# in each xdist worker): about half of collection's CPU. Where PYTHONDONTWRITEBYTECODE is set it
# cannot keep the result and redoes the pass on every run; the test process keeps it anyway, in
# the gitignored __pycache__ folders beside the tests (subprocesses keep the environment's
# setting). This conftest is loaded before any test module is collected.
sys.dont_write_bytecode = False


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionCache]:
    before = os.environ.get("TLMSEARCH_CACHE")
    user = Path(before).expanduser() if before else Path.home() / ".cache" / "tlmsearch"
    session = tmp_path_factory.mktemp("tlmsearch-cache")
    os.environ["TLMSEARCH_CACHE"] = str(session)
    try:
        yield SessionCache(user=user, session=session)
    finally:
        if before is None:
            os.environ.pop("TLMSEARCH_CACHE", None)
        else:
            os.environ["TLMSEARCH_CACHE"] = before


@pytest.fixture(scope="session", autouse=True)
def _no_ray_left_running() -> Iterator[None]:
    """Ray shut down at the end, and the session folders this test process's Ray instances made
    (named for its pid, under /tmp/ray) deleted: a folder left there is taken for a later
    process's own once pids wrap (a cleanup test saw one in CI)."""
    parents = {Path("/tmp/ray"), Path(tempfile.gettempdir()) / "ray"}
    before = {p for parent in parents for p in parent.glob(f"session_*_{os.getpid()}")}
    yield
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
    for parent in parents:
        for folder in set(parent.glob(f"session_*_{os.getpid()}")) - before:
            shutil.rmtree(folder, ignore_errors=True)
        latest = parent / "session_latest"
        if latest.is_symlink() and not latest.exists():
            latest.unlink(missing_ok=True)
