"""The timing half of the estimates (`tlmsearch.costs.calibrate`): a fake clock, injected rates."""

from __future__ import annotations

from pathlib import Path

import pytest

import tlmsearch.costs.calibrate as cal
from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.costs.estimate import Rate, eval_share
from tlmsearch.costs.rates import rate_shape, record_rate


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cal, "_TIMED", {})  # no calibration of another test is reused
    monkeypatch.setattr(cal, "current_load", lambda cores: 0.0)  # a quiet machine unless a test says otherwise
    monkeypatch.setattr(
        "tlmsearch.training.trainer.matmul_peak", lambda device, dtype, cache_dir=None: 1e11
    )  # tested apart
    model = preset("tiny").model_config("transformer")
    train = TrainConfig(steps=200, batch_size=4, eval_interval=50, eval_windows=8, threads=1, device="cpu")
    return model, train, DataConfig(corpus="pydoc")


def test_calibration_times_a_few_real_steps_on_the_given_clock(setup: tuple) -> None:
    model, train, data = setup
    ticks = iter(range(1000))
    rate = cal.calibrate(model, train, data, clock=lambda: float(next(ticks)))
    # one tick a step: the calls at the start and after steps 1..4 read 0, 1, 2, 3, 4; steps 2-4
    # are timed (3 s over 3 steps) and it stops once 3 s are timed (MAX_SECONDS)
    share = eval_share(50, 8, 4, 200)
    assert rate.s_per_step_low == rate.s_per_step_high == pytest.approx(1.0 * (1 + share))
    assert rate.source == "timed now on 3 steps" and rate.overhead_s == 0.0


def test_a_recorded_rate_is_used_without_timing(setup: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    from tlmsearch.training.trainer import resolve_vocab

    model, train, data = setup
    record_rate(data.cache_path(), rate_shape(resolve_vocab(model, data).to_dict(), train.to_dict(), "cpu"), 0.25, 1.0,
                "test")  # fmt: skip
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: pytest.fail("timed although a rate was recorded"))
    rate = cal.rate_or_reason(model, train, data, slots=2)
    assert isinstance(rate, Rate) and rate.s_per_step_high == 0.25 and "1 earlier run" in rate.source


def test_a_long_cpu_step_is_not_timed(setup: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    model, train, data = setup
    monkeypatch.setattr(cal, "predicted_step_s", lambda *a: 40.0)
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: pytest.fail("timed a 40 s step"))
    reason = cal.rate_or_reason(model, train, data, time_now=True)
    assert isinstance(reason, str) and "about 40 s" in reason


def test_runs_sharing_the_cores_slow_a_calibrated_rate(setup: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    model, train, data = setup
    monkeypatch.setattr(cal, "predicted_step_s", lambda *a: 0.01)
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: Rate(0.1, 0.1, 1.0, 0.0, "timed now on 6 steps"))
    alone = cal.rate_or_reason(model, train, data, slots=2, cores=2, time_now=True)
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: pytest.fail("timed the same shape twice in one process"))
    shared = cal.rate_or_reason(model, train, data, slots=4, cores=2, time_now=True)
    assert isinstance(alone, Rate) and alone.s_per_step_high == 0.1
    assert isinstance(shared, Rate) and shared.s_per_step_high == pytest.approx(0.2)
    assert shared.source == "timed now on 6 steps, x2 for 4 runs of 1 thread on 2 cores"


def test_load_slowdown_is_the_core_share_and_widens_with_load() -> None:
    from tlmsearch.costs.estimate import load_slowdown

    assert load_slowdown(1, 1, 2, 0.0) == (1.0, 1.0)  # one run, as timed
    assert load_slowdown(2, 1, 2, 0.0) == (1.0, 1.0)  # two runs of one thread on two cores: no sharing
    assert load_slowdown(4, 1, 2, 0.0) == (2.0, 2.0)  # four runs share two cores
    # a load of 1.7 on 2 cores: timed at 2.7/2 of its speed alone, two runs at 3.7/2
    low, high = load_slowdown(2, 1, 2, 1.7)
    assert low == pytest.approx(3.7 / 2.7) and high == pytest.approx(3.7 / 2.7 * (1 + 1.7 / 2))
    low6, high6 = load_slowdown(2, 1, 2, 6.0)  # heavier load: the range widens
    assert high6 / low6 > high / low
    assert load_slowdown(2, 1, 2, float("nan")) == (1.0, 1.0) and load_slowdown(2, 1, 0, -3.0) == (2.0, 2.0)


def test_a_calibrated_rate_under_load_becomes_a_range_said_in_the_plan(
    setup: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, train, data = setup
    monkeypatch.setattr(cal, "predicted_step_s", lambda *a: 0.01)
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: Rate(0.1, 0.1, 1.0, 0.0, "timed now on 6 steps"))
    rate = cal.rate_or_reason(model, train, data, slots=2, cores=2, load=1.7, time_now=True)
    assert isinstance(rate, Rate)
    assert (rate.s_per_step_low, rate.s_per_step_high) == pytest.approx((0.1 * 3.7 / 2.7, 0.1 * 3.7 / 2.7 * 1.85))
    assert rate.source == "timed now on 6 steps, x1.4-2.5 for 2 runs of 1 thread on 2 cores beside a load of 1.7"
    monkeypatch.setattr(cal, "current_load", lambda cores: 1.7)  # read before the timing when not given
    assert cal.rate_or_reason(model, train, data, slots=2, cores=2, time_now=True) == rate


def test_current_load_is_the_share_on_this_process_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.getloadavg", lambda: (6.0, 5.0, 4.0))
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert cal.current_load(2) == pytest.approx(1.5)  # 6 runnable threads spread over 8 cores, 2 of them ours
    assert cal.current_load(8) == pytest.approx(6.0)
