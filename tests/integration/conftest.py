"""One local Ray for the integration tests, started once and shared by every module that asks.

Starting Ray costs seconds of CPU on 2 cores, more than most tiny searches; a start per module
was most of the suite's wall time. `ray_session` starts a small local Ray only when none is
running, and never shuts it down (tests/conftest.py does, once, at the end of the run). The
engine's `ensure_ray` reuses a running session, so `search`, `run_fixed` and the CLI's
`verify`/`compare` called in-process train on it. Tests that need Ray settings of their own (a
benchmark that measures Ray's start-up, a CLI run in a subprocess) start their own; a module
after them gets a fresh shared session from this fixture.
"""

from __future__ import annotations

import logging
import sys

import pytest

RAY_CPUS = 2  # the searches' assertions ("baselines started two at a time") assume 2 concurrent trials
RAY_OBJECT_STORE_BYTES = 80 * 1024**2  # trials exchange only small dicts; Ray's floor is ~75 MiB


def start_shared_ray() -> None:
    """Start the shared local Ray unless a session is already running in this process."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        return
    from tlmsearch.tuning.ray_session import quiet_ray

    quiet_ray()
    import ray

    ray.init(
        address="local",
        num_cpus=RAY_CPUS,
        include_dashboard=False,
        object_store_memory=RAY_OBJECT_STORE_BYTES,
        log_to_driver=False,
        logging_level=logging.WARNING,
    )


@pytest.fixture(scope="module")
def ray_session() -> None:
    """The shared local Ray (started here if it is not running); use it with
    `pytestmark = pytest.mark.usefixtures("ray_session")` or as an argument."""
    start_shared_ray()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The benchmarks' dry runs go last: they shut Ray down when they end, and the searches
    before them then share one session (each benchmark reuses it or starts its own, as designed)."""
    items.sort(key=lambda item: "/integration/bench/" in str(item.path).replace("\\", "/"))
