"""bench/bench_sampler_pruning.py: recorded curves, the noise floor, pruned trials reach Optuna."""

from __future__ import annotations

import pytest

from bench import bench_sampler_pruning as bp
from bench import bench_samplers as bs


def test_curves_end_in_benchmark_4s_table() -> None:
    curves = bp.load_curves()
    table, _ = bs.load_table()
    assert curves.steps == (50, 100, 150, 200)
    assert curves.final.values == table.values
    assert curves.final.best == pytest.approx(table.best)
    assert curves.final(0.0, 0.0) == pytest.approx(table(0.0, 0.0))


def test_noise_floor_of_the_reference_run() -> None:
    floor = bp.noise_floor()
    assert 0.004 < floor < 0.015  # three baselines x three seeds at cpu-s: about 0.84 %


def test_asha_prunes_at_its_rungs_and_saves_steps() -> None:
    curves = bp.load_curves()
    run = bp.run_study(curves, "random", "asha", seed=0, trials=20)
    none = bp.run_study(curves, "random", "none", seed=0, trials=20)
    assert all(f is not None for f in none.finals) and set(none.steps) == {200}
    stopped = [s for f, s in zip(run.finals, run.steps, strict=True) if f is None]
    assert stopped and set(stopped) <= {50, 150}  # rungs at the grace (50) and 50 x 3
    # random proposals do not depend on results: the same profiles, so the same finals where complete
    assert [f for f in run.finals if f is not None] == [
        f for f, g in zip(none.finals, run.finals, strict=True) if g is not None
    ]
    assert sum(run.steps) < sum(none.steps)


def test_to_target_counts_only_full_length_trials() -> None:
    run = bp.Run(finals=(None, 2.5, 2.2), steps=(50, 200, 200), model_based=0)
    assert bp.to_target(run, 2.3) == (3, 450)
    assert bp.to_target(run, 2.0) == (None, None)
