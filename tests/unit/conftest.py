"""Unit tests never start Ray: a test that leaves a Ray session it started fails at teardown
(move it to tests/integration, see tests/README.md). Checking costs nothing: Ray is looked up
in sys.modules, never imported here."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


def _ray_running() -> bool:
    ray = sys.modules.get("ray")
    return bool(ray is not None and ray.is_initialized())


@pytest.fixture(autouse=True)
def _unit_tests_start_no_ray() -> Iterator[None]:
    before = _ray_running()
    yield
    if not before and _ray_running():
        sys.modules["ray"].shutdown()
        pytest.fail("a unit test started Ray: it belongs in tests/integration (see tests/README.md)")
