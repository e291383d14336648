"""bench/bench_samplers.py: the replayed table, trials-to-target counting, a dry replay."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench import bench_samplers as bs


def small_table() -> bs.Table:
    return bs.Table(xs=(0.0, 1.0, 3.0), ys=(0.0, 2.0), values=((3.0, 5.0), (2.0, 4.0), (6.0, 1.0)))


def test_table_is_exact_at_grid_points_and_bilinear_between() -> None:
    t = small_table()
    for i, x in enumerate(t.xs):
        for j, y in enumerate(t.ys):
            assert t(x, y) == pytest.approx(t.values[i][j])
    assert t(0.5, 0.0) == pytest.approx(2.5)  # halfway between 3 and 2
    assert t(0.0, 1.0) == pytest.approx(4.0)
    # centre of the cell [1, 3] x [0, 2]: mean of its four corners
    assert t(2.0, 1.0) == pytest.approx((2.0 + 4.0 + 6.0 + 1.0) / 4)
    assert t(-5.0, 9.0) == pytest.approx(5.0)  # clamped to the corner (0, 2)
    assert (t.best, t.worst, t.argbest()) == (1.0, 6.0, (3.0, 2.0))


def test_interpolated_values_never_go_below_the_table_minimum() -> None:
    t = bs.synthetic_table()
    xs = [bs.AXIS[0] + (bs.AXIS[1] - bs.AXIS[0]) * i / 40 for i in range(41)]
    assert min(t(x, y) for x in xs for y in xs) == pytest.approx(t.best)


def test_trials_to_target_and_censored_summary() -> None:
    assert bs.trials_to_target([5.0, 3.0, 1.0, 0.5], 1.0) == 3
    assert bs.trials_to_target([5.0, 3.0], 1.0) is None
    s = bs.summarize("random", "1%", [2, None, 4, 6], trials=10)
    assert (s.reached, s.runs, s.lo, s.hi) == (3, 4, 2, 11)  # a run that never reached it counts 11
    assert s.median == 5.0


def test_targets_are_relative_to_best_and_to_range() -> None:
    t = small_table()
    targets = bs.targets_for(t)
    assert targets["1% of best"] == pytest.approx(1.01)
    assert targets["10% of range"] == pytest.approx(1.0 + 0.1 * 5.0)


def test_knots3_profiles_keep_the_budget_and_the_centre_is_uniform() -> None:
    budget = bs.small_preset().budget()
    for a in bs.grid_axis():
        for b in bs.grid_axis():
            assert sum(bs.knots3(a, b).widths(budget)) == budget.total
    assert bs.knots3(0.0, 0.0).widths(budget) == budget.uniform()


def test_dry_replay_writes_figures_per_sampler_and_target(tmp_path: Path) -> None:
    out = tmp_path / "samplers.json"
    assert bs.main(["--dry", "--samplers", "random,qmc", "--seeds", "2", "--trials", "12", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert len(result["summaries"]) == 2 * len(result["targets"])
    assert all(s["runs"] == 2 and 1 <= s["median"] <= 13 for s in result["summaries"])


def test_recorded_table_is_complete_and_on_budget() -> None:
    if not bs.TABLE_FILE.exists():
        pytest.skip("no recorded table")
    data = json.loads(bs.TABLE_FILE.read_text())
    if not data.get("complete"):
        pytest.skip("the table is being recorded")
    table, _ = bs.load_table()
    assert len(table.values) == len(table.xs) and all(len(r) == len(table.ys) for r in table.values)
    assert all(math.isfinite(v) and 0 < v < math.log(256) for r in table.values for v in r)
    budget = bs.small_preset().budget()
    for p in data["points"]:
        assert p["widths"] == list(bs.knots3(p["a"], p["b"]).widths(budget))
    assert data["command"].startswith("python -m bench.bench_samplers") and data["environment"]["versions"]


def test_cells_mark_runs_that_never_reached_the_target() -> None:
    assert bs.median_cell(51, 50) == ">50" and bs.median_cell(7.5, 50) == "7.5"
    assert bs.speedup_cell(13.0, 6.5, 50) == "2.00"
    assert bs.speedup_cell(51.0, 12.0, 50) == ">4.25"  # random never got there within 50 trials
    assert bs.speedup_cell(51.0, 51.0, 50) == "-"
