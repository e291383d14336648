"""bench/bench_parallel.py: measurement order and ratio; a dry run with real worker processes (slow)."""

from __future__ import annotations

import pytest

from bench import bench_parallel as bp


def test_order_is_balanced_against_drift() -> None:
    assert bp.order(1) == ["S", "P"]
    assert bp.order(2) == ["S", "P", "P", "S"]
    o = bp.order(4)
    assert o.count("S") == o.count("P") == 4
    # mean position of each mode is the same: a linear drift hits both alike
    assert sum(i for i, m in enumerate(o) if m == "S") == sum(i for i, m in enumerate(o) if m == "P")


def test_speedup_is_sequential_over_parallel_wall() -> None:
    assert bp.speedup([20.0, 22.0], [10.0, 11.0]) == pytest.approx(2.0)
