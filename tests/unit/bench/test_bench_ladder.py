"""The ladder benchmark runs end to end on a few ladders and writes its figures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.bench_ladder import main, paper_slope


def test_the_power_slope_is_the_papers_gain_over_its_decades() -> None:
    """log(16.28 / 14.44) nats reached over log10(6 * 440e6 * 70 * 440e6 / 1.67e13) decades."""
    decades = math.log10(6 * 440e6 * 70 * 440e6 / 1.67e13)
    assert paper_slope() == pytest.approx(math.log(16.28 / 14.44) / decades, rel=1e-9)
    assert 0.017 < paper_slope() < 0.019


@pytest.mark.slow
def test_a_tiny_run_writes_rates_in_range(tmp_path: Path) -> None:
    out = tmp_path / "ladder.json"
    result = main(["--k", "4", "--ladders", "40", "--draws", "50", "--out", str(out)])
    assert len(result["rows"]) == 36 and json.loads(out.read_text())["ladders"] == 40
    assert len(result["reference"]) == 4
    for r in result["rows"]:
        assert 0.0 <= r["false_shown"] <= r["p_below_alpha"] <= 1.0
        if r["power"] is not None:
            assert 0.5 <= r["slope_coverage"] <= 1.0
