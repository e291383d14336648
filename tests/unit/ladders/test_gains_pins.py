"""Pins of a ladder point's gains (`ladders/gains.py`) worked out by hand: the paired gain and
its standard error on three seeds, the latest verification's step count only, the reference a
verify.json names, no gain of a reference over itself, two seeds as the least that gives a gain,
and the interval of a gain from one seed."""

from __future__ import annotations

import dataclasses
import math

import pytest
from analysis_fakes import record

from tlmsearch.ladders.gains import PairedGain, paired_gain, point_result
from tlmsearch.rundir.records import TrialRecord

UNIFORM, COSINE, KNOTS = "uniform", "cosine:start=1.5,end=0.5", "knots:k0=3,k1=1"
# final val_loss at 40 steps (log perplexity), seeds 0, 1, 2
LOSSES = {UNIFORM: [2.30, 2.32, 2.31], COSINE: [2.28, 2.29, 2.30], KNOTS: [2.25, 2.27, 2.26]}


def _records() -> list[TrialRecord]:
    # an earlier verification at 20 steps first (far worse losses), then the latest at 40
    old = [
        record(f"o-{p}-{s}", p, 3.0 + 0.1 * s, kind="verify", seed=s, max_steps=20) for p in LOSSES for s in range(3)
    ]
    new = [record(f"n-{p}-{s}", p, LOSSES[p][s], kind="verify", seed=s) for p in LOSSES for s in range(3)]
    return [TrialRecord.from_dict(d) for d in old + new]


def test_the_gains_of_the_latest_verification_by_hand() -> None:
    r = point_result(_records(), None, margin=0.01, alpha=0.05, arch="x")
    assert r.note is None and r.verdict is not None
    # cosine over uniform: differences 0.02, 0.03, 0.01: mean 0.02, sd 0.01, se 0.01 / sqrt 3
    g = r.gains["cosine"]["uniform"]
    assert (g.mean, g.se, g.n) == pytest.approx((0.02, 0.01 / math.sqrt(3), 3), rel=1e-9)
    # knots over cosine: 0.03, 0.02, 0.04; over uniform: 0.05 at every seed (se 0)
    k = r.gains[KNOTS]
    assert (k["cosine"].mean, k["cosine"].se) == pytest.approx((0.03, 0.01 / math.sqrt(3)), rel=1e-9)
    assert k["uniform"].mean == pytest.approx(0.05, rel=1e-9) and k["uniform"].se == pytest.approx(0.0, abs=1e-12)
    # a reference has no gain over itself
    assert set(r.gains["cosine"]) == {"uniform"} and set(r.gains["uniform"]) == {"cosine"}


def test_the_gains_under_cosine_are_over_the_reference_verify_json_names() -> None:
    r = point_result(_records(), {"reference": KNOTS}, margin=0.01, alpha=0.05, arch="x")
    assert set(r.gains[KNOTS]) == {"uniform"}  # knots is the reference: no gain over itself
    assert r.gains["cosine"]["cosine"].mean == pytest.approx(-0.03, rel=1e-9)  # cosine over knots
    assert r.gains["uniform"]["cosine"].mean == pytest.approx(-0.05, rel=1e-9)


def test_two_common_seeds_give_a_gain_one_does_not() -> None:
    ref = dataclasses.replace(_result(COSINE), ppl={0: math.exp(2.28), 1: math.exp(2.29), 5: 1.0})
    two = paired_gain(dataclasses.replace(_result(UNIFORM), ppl={0: math.exp(2.30), 1: math.exp(2.32)}), ref)
    assert two is not None and (two.mean, two.n) == pytest.approx((-0.025, 2), rel=1e-9)
    assert two.se == pytest.approx(0.005, rel=1e-9)  # sd of -0.02, -0.03 is 0.00707; / sqrt 2
    assert paired_gain(dataclasses.replace(_result(UNIFORM), ppl={0: 10.0, 7: 10.0}), ref) is None


def _result(spec: str):  # one ProfileResult of the latest verification
    from tlmsearch.analysis.collect import profile_results

    latest = [r for r in _records() if r.max_steps == 40]
    return next(r for r in profile_results(latest, kinds=("verify",)) if r.label == spec)


def test_a_gain_of_one_seed_has_no_interval_and_a_gain_is_frozen() -> None:
    one = PairedGain(0.01, math.nan, 1)
    assert all(math.isnan(v) for v in one.interval(0.05))
    d = one.to_dict(0.05)
    assert d["low"] is None and d["high"] is None and d["gain"] == pytest.approx(math.expm1(0.01))
    # three seeds: t(0.975, 2) = 4.303
    lo, hi = PairedGain(0.02, 0.005, 3).interval(0.05)
    assert (lo, hi) == pytest.approx((0.02 - 4.302653 * 0.005, 0.02 + 4.302653 * 0.005), rel=1e-6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.n = 2  # type: ignore[misc]
