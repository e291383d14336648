"""bench/bench_parallel.py: measurement order and ratio; a dry run with real worker processes (slow)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import bench_parallel as bp  # noqa: E402


def test_order_is_balanced_against_drift() -> None:
    assert bp.order(1) == ["S", "P"]
    assert bp.order(2) == ["S", "P", "P", "S"]
    o = bp.order(4)
    assert o.count("S") == o.count("P") == 4
    # mean position of each mode is the same: a linear drift hits both alike
    assert sum(i for i, m in enumerate(o) if m == "S") == sum(i for i, m in enumerate(o) if m == "P")


def test_speedup_is_sequential_over_parallel_wall() -> None:
    assert bp.speedup([20.0, 22.0], [10.0, 11.0]) == pytest.approx(2.0)


@pytest.mark.slow
def test_dry_run(tmp_path: Path) -> None:
    import json

    out = tmp_path / "parallel.json"
    assert bp.main(["--dry", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    (r,) = result["results"]
    assert len(r["seq_walls"]) == len(r["par_walls"]) == 1 and r["wall_ratio"] > 0
