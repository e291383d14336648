"""The learning-rate rule on planted optima (bench/bench_lr_rule.py): the rule the runs use picks a
planted optimum within one grid step in >= 90% of 1,000 simulated calibrations at the committed
ladders' measured spread, finds an optimum outside the first grid by widening, and the pure rule's
figures are pinned at a fixed seed. The cells' curvature and paired sd are those of the committed
records."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from bench.bench_lr_rule import MEASURED, cell, measured, simulate_one
from tlmsearch.configs.lr_calibration import MAX_WIDEN

ROOT = Path(__file__).resolve().parents[3]
NOISIEST = MEASURED[2]  # the earlier ladder's smallest point: 262 steps, paired sd 0.0697 nats


@pytest.mark.slow
def test_the_rule_picks_a_planted_optimum_within_one_step_at_the_measured_spread() -> None:
    """1,000 calibrations of 3 paired seeds at each committed ladder point's curvature and paired sd
    (the noisiest: the 262-step point, paired sd 0.0697 nats; last, ladder8's first point, the
    README's answer), optimum at the middle rate."""
    for label, curvature, sd in MEASURED:
        got = cell(curvature, sd, 0.0, 3, MAX_WIDEN, 1000, intervals=False)
        assert got["within_one_step"] >= 0.90, label
    noisy = cell(*NOISIEST[1:], 0.0, 3, MAX_WIDEN, 1000, intervals=False)
    assert noisy["within_one_step"] == pytest.approx(0.905)  # pinned: the simulation's own seed (crc32 of the cell)
    assert noisy["at_optimum"] == pytest.approx(0.45) and noisy["runs"] == pytest.approx(15.135)  # widened 4.5%
    before = cell(*NOISIEST[1:], 0.0, 1, 0, 1000, intervals=False)  # one seed, the lowest loss, no widening
    assert before["within_one_step"] == pytest.approx(0.864) and before["at_optimum"] == pytest.approx(0.338)
    assert before["runs"] == 5


def test_one_calibration_at_a_fixed_seed_chooses_the_planted_rate() -> None:
    cal = simulate_one(np.random.default_rng(7), 0.014, 0.0168, 1.0, 3, MAX_WIDEN)
    assert cal.complete and cal.added == () and cal.best_index == 3  # the planted optimum, 2x the configured rate
    assert abs(math.log2(cal.rate) - 1.0) <= 0.5 and cal.chosen == 2.12  # the parabola's vertex, 3 digits


def test_a_planted_optimum_outside_the_grid_is_found_by_widening() -> None:
    """Optimum at 8x the configured rate (one factor-2 step past the grid's top, 4x): the rule widens
    to 8x and 16x, then the best mean is inside; with one seed and no widening it stays at the edge."""
    rng = np.random.default_rng(3)
    cal = simulate_one(rng, 0.014, 0.0168, 3.0, 3, MAX_WIDEN)
    assert cal.added == (8.0, 16.0) and cal.edge is None and cal.warnings() == []
    assert abs(math.log2(cal.rate) - 3.0) <= 0.5 and cal.rates == (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    assert cal.best_index == 5 and cal.chosen == 7.34
    low = simulate_one(np.random.default_rng(3), 0.014, 0.0168, -3.0, 3, MAX_WIDEN)
    assert low.added == (0.0625, 0.125) and abs(math.log2(low.rate) + 3.0) <= 0.5 and low.chosen == 0.148
    stuck = simulate_one(np.random.default_rng(3), 0.014, 0.0168, 3.0, 1, 0)
    assert stuck.edge == "highest" and stuck.rate == 4.0 and "higher rate may be better" in stuck.warnings()[0]


def test_the_cells_are_the_committed_records() -> None:
    """Each cell's curvature and paired sd as `measured` reads them from the committed ladder points
    (the earlier ladder's smallest point had its best rate at the grid's edge: its cell takes the
    median curvature 0.014 of the calibrations with an inside optimum, and only its paired sd)."""
    ladder, ladder8 = ROOT / "runs/reference/ladder", ROOT / "runs/reference/ladder8"
    points = {
        MEASURED[0]: ladder / "cpu-xs-t20",
        MEASURED[1]: ladder / "cpu-xs-n_layers2-t20",
        MEASURED[2]: ladder / "cpu-xs-d_model32-base_width96-n_layers2-t20",
        MEASURED[3]: ladder8 / "cpu-xs-d_model16-n_heads1-base_width48-n_layers8-t20",
    }
    assert len(points) == len(MEASURED) == 4
    for (label, curvature, sd), point in points.items():
        got_curvature, got_sd = measured(point)
        assert got_sd == pytest.approx(sd, abs=5e-5 if sd < 0.05 else 5e-4), label
        if point.name.startswith("cpu-xs-d_model32"):
            assert got_curvature < 0.002 < curvature == 0.014, label  # flat: the median stands in
        else:
            assert got_curvature == pytest.approx(curvature, abs=5e-5 if curvature < 0.01 else 5e-4), label
