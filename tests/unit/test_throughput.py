"""The fair throughput micro-benchmark: interleaving, ratios, the A/A noise floor (fake clock)."""

from __future__ import annotations

import math

import pytest

from tlmsearch.core.base import ModelConfig
from tlmsearch.costs.throughput import (
    AA_NAME,
    ThroughputConfig,
    measure,
    noise_floor,
    rankings,
    speeds,
    time_rounds,
    trial_metrics,
)
from tlmsearch.errors import ConfigError


class FakeMachine:
    """A clock and workloads: each call costs its model's base time times the round's load."""

    def __init__(self, cost: dict[str, float], load: list[float]) -> None:
        self.t, self.cost, self.load, self.calls = 0.0, cost, load, []
        self.round = -1

    def clock(self) -> float:
        return self.t

    def workloads(self) -> dict[str, dict[str, object]]:
        def call(name: str, mode: str) -> object:
            def fn() -> None:
                self.calls.append((name, mode))
                factor = self.load[self.round] if self.round >= 0 else 1.0
                self.t += self.cost[name] * factor * (2.0 if mode == "train" else 1.0)

            return fn

        return {n: {"train": call(n, "train"), "infer": call(n, "infer")} for n in self.cost}


def test_rounds_rotate_the_order_and_warmup_is_not_timed() -> None:
    m = FakeMachine({"a": 1.0, "b": 1.0, "c": 1.0}, load=[1.0] * 3)
    secs = time_rounds(m.workloads(), repeats=3, warmup=2, clock=m.clock)  # type: ignore[arg-type]
    warm, timed = m.calls[:12], m.calls[12:]
    assert len(warm) == 3 * 2 * 2 and len(timed) == 3 * 2 * 3
    firsts = [timed[k * 6][0] for k in range(3)]  # who comes first in each round
    assert firsts == ["a", "b", "c"]
    assert secs["a"]["train"] == (2.0, 2.0, 2.0) and secs["a"]["infer"] == (1.0, 1.0, 1.0)


def test_iters_average_per_call() -> None:
    m = FakeMachine({"a": 3.0}, load=[1.0])
    assert time_rounds(m.workloads(), repeats=2, iters=4, warmup=0, clock=m.clock)["a"]["infer"] == (3.0, 3.0)  # type: ignore[arg-type]


def test_ratio_to_the_reference_cancels_the_load_both_shared() -> None:
    # the load changes 5x between rounds; inside a round it is shared (a ticks per round below)
    cost = {"ref": 1.0, "fast": 0.8, "slow": 1.25}
    secs = {n: {"train": tuple(c * f for f in (1.0, 5.0, 2.0))} for n, c in cost.items()}
    got = {s.name: s for s in speeds(secs, "ref", tokens_per_call=100)}
    assert got["fast"].ratio == pytest.approx(1.25) and got["fast"].lo == pytest.approx(got["fast"].hi)
    assert got["slow"].ratio == pytest.approx(0.8)
    assert got["ref"].ratios == (1.0, 1.0, 1.0)
    assert got["ref"].tokens_per_s == pytest.approx(100 / 2.0)  # median seconds 2.0


def test_noise_floor_of_an_aa_pair() -> None:
    assert noise_floor([1.0, 1.0, 1.0]) == 0.0
    assert noise_floor([0.98, 1.0, 1.04]) == pytest.approx(0.03)  # half the range
    assert noise_floor([1.10, 1.10, 1.11]) == pytest.approx(0.10)  # a biased copy: |median - 1|


def test_rankings_leave_out_the_copy_and_mark_what_noise_cannot_separate() -> None:
    secs = {
        "ref": {"train": (1.0, 1.0, 1.0)},
        AA_NAME: {"train": (1.02, 0.98, 1.0)},  # ratios 0.98, 1.02, 1.0: floor 0.02
        "same": {"train": (0.99, 0.99, 1.0)},  # 1% faster: within noise
        "fast": {"train": (0.5, 0.5, 0.5)},  # twice as fast
    }
    (r,) = rankings(speeds(secs, "ref", 10))
    assert [s.name for s in r.speeds] == ["fast", "same", "ref"]
    assert r.floor == pytest.approx(0.02, rel=1e-2)
    assert not r.within_noise(r.speeds[0]) and r.within_noise(r.speeds[1]) and r.within_noise(r.speeds[2])
    assert r.to_dict()["profiles"][0]["ratio"] == pytest.approx(2.0)


def test_rankings_without_a_copy_have_no_floor() -> None:
    (r,) = rankings(speeds({"ref": {"infer": (1.0,)}}, "ref", 1))
    assert math.isnan(r.floor)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="reference"):
        speeds({"a": {"train": (1.0,)}}, "b", 1)
    with pytest.raises(ValueError, match="same modes"):
        time_rounds({"a": {"train": lambda: None}, "b": {"infer": lambda: None}}, repeats=1)
    with pytest.raises(ConfigError, match="repeats"):
        ThroughputConfig(repeats=0)


def _tiny(widths: tuple[int, ...]) -> ModelConfig:
    return ModelConfig(arch="transformer", d_model=16, n_layers=len(widths), n_heads=2, mlp_widths=widths, seq_len=8)


def test_measure_times_real_models_with_an_injected_clock() -> None:
    ticks = iter(range(10_000))
    cfg = ThroughputConfig(batch_size=2, repeats=3, warmup=1)
    got = measure({"uniform": _tiny((32, 32)), "taper": _tiny((48, 16))}, "uniform", cfg, clock=lambda: next(ticks))
    names = {(s.name, s.mode) for s in got}
    assert names == {(n, m) for n in ("uniform", "taper", AA_NAME) for m in ("train", "infer")}
    assert all(s.ratios == (1.0, 1.0, 1.0) for s in got)  # every timed call took one tick
    assert all(s.tokens_per_s == 2 * 8 for s in got)


def test_trial_metrics_keys() -> None:
    got = trial_metrics(_tiny((48, 16)), _tiny((32, 32)), ThroughputConfig(batch_size=1, repeats=2))
    keys = ("speed", "speed_lo", "speed_hi", "bench_tokens_per_s")
    assert set(got) == {f"{m}_{k}" for m in ("train", "infer") for k in keys}
    assert all(v > 0 for v in got.values())
    assert got["train_speed_lo"] <= got["train_speed"] <= got["train_speed_hi"]
