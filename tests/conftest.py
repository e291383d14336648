"""Shared by the whole suite: no Ray session outlives the test run.

Ray is started at most once per run where possible (see integration/conftest.py) and kept
between modules, as the CLI keeps it for the life of its process; it is shut down here, once,
when the session ends. Shared helpers live in tests/helpers (on sys.path via pyproject's
`pythonpath`); the rule for what goes where is in tests/README.md.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def _no_ray_left_running() -> Iterator[None]:
    yield
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
