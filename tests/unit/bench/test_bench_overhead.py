"""bench/bench_overhead.py: the Ray and the plain runs train exactly the same thing."""

from __future__ import annotations

import pytest

from bench import bench_overhead as bo


def test_steps_for_is_a_multiple_of_the_evaluations() -> None:
    assert bo.steps_for(30.0, 0.05) == 600
    assert bo.steps_for(3.0, 0.07) == 40  # 43 rounded down to a multiple of 4
    assert bo.steps_for(0.01, 1.0) == bo.EVALS_PER_TRIAL


@pytest.mark.parametrize("threads", [1, 2])
def test_ray_trial_trains_what_the_plain_loop_trains(threads: int) -> None:
    from tlmsearch.configs.resolve import trial_shape
    from tlmsearch.profiles import ProfileSpec
    from tlmsearch.tuning.trainable import trial_train_config

    s = bo.Setup(shape=dict(bo.SMALL_SHAPE), batch_size=16, eval_windows=64, threads=threads, corpus="shakespeare")
    cfg = bo.search_config(s, 120, "runs")
    assert cfg.scheduler == "none" and cfg.max_concurrent == 1
    # the engine's train config for a trial with seed 0 is the plain loop's
    assert trial_train_config(cfg, 0) == bo.train_config(s, 120).replace(seed=0)
    _, widths, model = trial_shape(cfg, ProfileSpec.parse(bo.PROFILES[1]))
    assert model.n_layers == 6 and model.d_model == 64 and sum(widths) == 6 * 192
