"""The timing half of the estimates (`tlmsearch.calibrate`): a fake clock, injected rates."""

from __future__ import annotations

from pathlib import Path

import pytest

import tlmsearch.calibrate as cal
from tlmsearch.config import DataConfig, TrainConfig
from tlmsearch.estimate import Rate, eval_share
from tlmsearch.presets import preset
from tlmsearch.rates import rate_shape, record_rate


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cal, "_TIMED", {})  # no calibration of another test is reused
    monkeypatch.setattr("tlmsearch.trainer.matmul_peak", lambda device, dtype, cache_dir=None: 1e11)  # tested apart
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
    from tlmsearch.trainer import resolve_vocab

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
    reason = cal.rate_or_reason(model, train, data)
    assert isinstance(reason, str) and "about 40 s" in reason


def test_runs_sharing_the_cores_slow_a_calibrated_rate(setup: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    model, train, data = setup
    monkeypatch.setattr(cal, "predicted_step_s", lambda *a: 0.01)
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: Rate(0.1, 0.1, 1.0, 0.0, "timed now on 6 steps"))
    alone = cal.rate_or_reason(model, train, data, slots=2, cores=2)
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: pytest.fail("timed the same shape twice in one process"))
    shared = cal.rate_or_reason(model, train, data, slots=4, cores=2)
    assert isinstance(alone, Rate) and alone.s_per_step_high == 0.1
    assert isinstance(shared, Rate) and shared.s_per_step_high == pytest.approx(0.2)
    assert shared.source == "timed now on 6 steps, x2 for 4 runs of 1 thread on 2 cores"
