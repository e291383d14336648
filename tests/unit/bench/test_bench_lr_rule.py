"""The learning-rate rule on planted optima (bench/bench_lr_rule.py): the rule the runs use picks a
planted optimum within one grid step in >= 90% of 1,000 simulated calibrations at the committed
ladder's measured spread, finds an optimum outside the first grid by widening, and the pure rule's
figures are pinned at a fixed seed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.bench_lr_rule import MEASURED, cell, simulate_one
from tlmsearch.configs.lr_calibration import MAX_WIDEN


@pytest.mark.slow
def test_the_rule_picks_a_planted_optimum_within_one_step_at_the_measured_spread() -> None:
    """1,000 calibrations of 3 paired seeds at each committed ladder point's curvature and paired sd
    (the noisiest: the 262-step point, paired sd 0.0697 nats), optimum at the middle rate."""
    for label, curvature, sd in MEASURED:
        got = cell(curvature, sd, 0.0, 3, MAX_WIDEN, 1000, intervals=False)
        assert got["within_one_step"] >= 0.90, label
    noisy = cell(*MEASURED[-1][1:], 0.0, 3, MAX_WIDEN, 1000, intervals=False)
    assert noisy["within_one_step"] == pytest.approx(0.905)  # pinned: the simulation's own seed (crc32 of the cell)
    assert noisy["at_optimum"] == pytest.approx(0.45) and noisy["runs"] == pytest.approx(15.135)  # widened 4.5%
    before = cell(*MEASURED[-1][1:], 0.0, 1, 0, 1000, intervals=False)  # one seed, the lowest loss, no widening
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
