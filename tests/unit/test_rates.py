"""The rate cache (`tlmsearch.costs.rates`) and what trials add to it (`tuning.recorder.remember_rate`)."""

from __future__ import annotations

import math
from pathlib import Path

from tlmsearch.configs.presets import preset
from tlmsearch.costs.rates import KEEP, rate_for, rate_shape, rates_file, record_rate, run_rate
from tlmsearch.rundir.records import TrialRecord

MODEL = preset("tiny").model_config("transformer").to_dict()
TRAIN = {"batch_size": 16, "grad_accum": 1, "eval_interval": 50, "eval_windows": 32, "dtype": "float32",
         "compile": False, "threads": 1}  # fmt: skip


def test_recorded_rates_come_back_as_a_range(tmp_path: Path) -> None:
    shape = rate_shape(MODEL, TRAIN, "cpu")
    assert rate_for(tmp_path, shape) is None
    for s, o in ((0.2, 1.0), (0.1, 30.0), (0.3, 2.0)):
        assert record_rate(tmp_path, shape, s, o, "test")
    r = rate_for(tmp_path, shape)
    assert r is not None and (r.s_per_step_low, r.s_per_step_high, r.overhead_s) == (0.1, 0.3, 2.0)
    assert r.startup_s == 28.0 and r.source == "measured in 3 earlier runs of this shape"


def test_the_key_separates_what_sets_the_speed(tmp_path: Path) -> None:
    shape = rate_shape(MODEL, TRAIN, "cpu")
    record_rate(tmp_path, shape, 0.2, 1.0, "test")
    assert rate_for(tmp_path, rate_shape(MODEL, {**TRAIN, "threads": 2}, "cpu")) is None
    assert rate_for(tmp_path, rate_shape(MODEL, TRAIN, "cuda")) is None
    assert rate_for(tmp_path, rate_shape({**MODEL, "d_model": 64}, TRAIN, "cpu")) is None
    # the per-layer split of the same total does not change the key: same FLOPs
    split = {**MODEL, "mlp_widths": [MODEL["mlp_widths"][0] + 16, MODEL["mlp_widths"][1] - 16]}
    assert rate_for(tmp_path, rate_shape(split, TRAIN, "cpu")) is not None


def test_damaged_lines_are_skipped_and_only_the_newest_count(tmp_path: Path) -> None:
    shape = rate_shape(MODEL, TRAIN, "cpu")
    record_rate(tmp_path, shape, 9.0, 0.0, "old")
    for _ in range(KEEP):
        record_rate(tmp_path, shape, 0.5, 0.0, "new")
    with rates_file(tmp_path).open("a") as f:
        f.write('{"key": "cut in the mid\n[1, 2]\n')
    r = rate_for(tmp_path, shape)
    assert r is not None and r.s_per_step_high == 0.5  # the oldest fell out of the newest KEEP
    assert not record_rate(tmp_path, shape, math.nan, 0.0, "x") and not record_rate(tmp_path, shape, 0.0, 0.0, "x")


def test_run_rate() -> None:
    assert run_rate({"elapsed_s": 30.0}, 300, 35.0) == (0.1, 5.0)
    assert run_rate({"elapsed_s": 30.0}, 300, 0.0) == (0.1, 0.0)  # wall time unknown
    assert run_rate({"elapsed_s": 30.0}, 300, 20.0) is None  # resumed over sessions: mixed clocks
    assert run_rate({}, 300, 35.0) is None and run_rate({"elapsed_s": 3.0}, 0, 5.0) is None


def test_ended_trials_feed_the_cache(tmp_path: Path) -> None:
    from tlmsearch.tuning.recorder import remember_rate

    train = {**TRAIN, "steps": 100}
    rec = TrialRecord(trial_id="a", status="stopped", steps=40, max_steps=100, metrics={"elapsed_s": 8.0},
                      wall_s=10.0, model=MODEL, train=train, devices=("cpu",))  # fmt: skip
    assert remember_rate(rec, tmp_path)
    r = rate_for(tmp_path, rate_shape(MODEL, train, "cpu"))
    assert r is not None and r.s_per_step_low == 0.2 and r.overhead_s == 2.0
    assert not remember_rate(rec.replace(status="failed"), tmp_path)
    assert not remember_rate(rec.replace(model={}), tmp_path)  # an old record: what it trained is unknown
    assert not remember_rate(rec.replace(retries=1), tmp_path)
