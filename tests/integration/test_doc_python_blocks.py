"""Every Python block of the README and docs/ runs as written, in order, one session per document,
in a temporary folder (their runs/ land there), each under a minute on the 2-core machine
(allowing for its load): the blocks are written at the tiny preset on the pydoc corpus."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from doc_python import python_blocks, run_document

pytestmark = pytest.mark.usefixtures("ray_session")  # the shared local Ray of tests/integration

LIMIT_S = 60.0


@pytest.mark.slow
@pytest.mark.parametrize("path", list(python_blocks()), ids=lambda p: p.name)
def test_every_python_block_runs_at_tiny_size(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    timings: list[tuple[str, float]] = []
    run_document(path, python_blocks()[path], {}, timings)
    assert len(timings) == len(python_blocks()[path])
    # a block's minute, on this 2-core machine, stretched by the load beyond its cores
    limit = LIMIT_S * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    slow = [f"{where}: {seconds:.0f} s" for where, seconds in timings if seconds > limit]
    assert slow == [], f"blocks over {limit:.0f} s: {slow}"
    assert (tmp_path / "runs").is_dir() or path.name != "python-api.md"
