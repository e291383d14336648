"""Shared test fixtures."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module", autouse=True)
def _no_ray_left_running() -> Iterator[None]:
    """Each test module leaves no Ray session behind: commands under test start a local Ray
    on demand (and keep it for the life of the process, as the CLI does), and a later module
    may start its own with other settings."""
    yield
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
