"""Prices before training (`tlmsearch.costs.price`): the FLOP model's rate, its range, the limit."""

from __future__ import annotations

from pathlib import Path

import pytest

import tlmsearch.costs.calibrate as cal
from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.costs.price import CPU_STEPS, REFERENCE_PEAK, check_price, cpu_step_model, model_rate
from tlmsearch.errors import UserError


def test_a_measured_shape_is_priced_at_its_own_seconds() -> None:
    """At the FLOPs of a measured shape the model gives back that shape's step time (a point)."""
    for arch, (fixed, points) in CPU_STEPS.items():
        for flops, seconds in points:
            got_fixed, (lo, hi) = cpu_step_model(arch, flops)
            assert lo == pytest.approx(hi) and got_fixed == fixed
            rate = model_rate(flops, REFERENCE_PEAK, (lo, hi), fixed, "here")
            assert rate.s_per_step_low == pytest.approx(seconds) == rate.s_per_step_high


def test_between_two_measured_shapes_the_range_is_their_shares() -> None:
    # Titans: cpu-xs 7.32e9 FLOPs in 0.617 s, cpu-s 7.30e10 in 2.362 s, 0.025 s fixed; by hand:
    # shares 7.32e9 / (90.6e9 x 0.592) = 0.1365 and 7.30e10 / (90.6e9 x 2.337) = 0.3448
    fixed, (lo, hi) = cpu_step_model("titans", 2e10)
    assert fixed == 0.025
    assert lo == pytest.approx(0.1365, abs=5e-4) and hi == pytest.approx(0.3448, abs=5e-4)
    rate = model_rate(2e10, REFERENCE_PEAK, (lo, hi), fixed, "here")
    assert rate.s_per_step_low == pytest.approx(0.025 + 2e10 / (90.6e9 * 0.3448), rel=2e-3)
    assert rate.s_per_step_high == pytest.approx(0.025 + 2e10 / (90.6e9 * 0.1365), rel=2e-3)
    # beyond the largest measured shape: that shape's share, a point, linear in FLOPs
    _, (lo, hi) = cpu_step_model("transformer", 1e12)
    assert lo == hi == pytest.approx(5.32e10 / (90.6e9 * (1.235 - 0.008)))
    _, (lo, hi) = cpu_step_model("no-such-arch", 1e10)  # unmeasured: every measured share
    assert lo < 0.14 and hi > 0.45


def test_rate_without_a_recording_is_the_flop_model_and_trains_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: pytest.fail("trained to price"))
    monkeypatch.setattr("tlmsearch.training.hardware.matmul_peak", lambda device, dtype, cache_dir=None: REFERENCE_PEAK)
    model = preset("cpu-s").model_config("transformer")
    train = TrainConfig(steps=100, batch_size=16, eval_interval=1000, eval_windows=1, threads=1, device="cpu")
    rate = cal.rate_or_reason(model, train, DataConfig(corpus="pydoc"), slots=1, cores=2, load=0.0)
    assert not isinstance(rate, str)
    assert "FLOPs at 48% of this CPU's measured matmul peak" in rate.source
    # the cpu-s Transformer of the table (vocab differs: the byte tokenizer's 256 here too)
    assert rate.s_per_step_low == pytest.approx(1.235, rel=0.05)


def test_a_price_beyond_the_limit_is_refused_in_one_line_unless_confirmed() -> None:
    check_price("study s", 11 * 3600, yes=False)  # within 12 h
    check_price("study s", 100 * 3600, yes=True)  # confirmed
    check_price("study s", 100 * 3600, yes=False, limit_hours=0)  # no limit
    with pytest.raises(UserError) as e:
        check_price("study s", 100 * 3600, yes=False, shrink="--trials, --archs")
    text = str(e.value)
    assert "\n" not in text and "100 h (4 days)" in text and "12 h limit" in text
    assert "--trials, --archs" in text and "--yes" in text and "--max-hours" in text
