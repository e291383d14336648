"""The ladder benchmark runs end to end on a few ladders and writes its figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.bench_ladder import cells, main


def test_cells_span_the_spreads_and_seeds() -> None:
    got = cells(3)
    assert len(got) == 9 and all(len(sd) == 3 for _, _, sd in got)
    falls = dict(((n, s), sd) for n, s, sd in got)[("falls-10x", 2)]
    assert abs(falls[0] / falls[-1] - 10) < 1e-9


@pytest.mark.slow
def test_a_tiny_run_writes_rates_in_range(tmp_path: Path) -> None:
    out = tmp_path / "ladder.json"
    result = main(["--k", "3", "--ladders", "40", "--draws", "200", "--methods", "pivot", "--out", str(out)])
    assert len(result["rows"]) == 9 and json.loads(out.read_text())["ladders"] == 40
    for r in result["rows"]:
        assert 0.0 <= r["false_trend"] <= 1.0 and 0.5 <= r["slope_coverage"] <= 1.0
