"""The trend fit against known truth, over simulated ladders (seeded).

The ladder: three points 10x of compute apart (100x in all), 4 paired seeds a point, a paired sd
falling from 0.02 to 0.007 nats up the ladder (about the spread bench/README 14 measured at cpu-xs
and what larger models show). Each rate is over S = 2,000 ladders; the tolerance is three
Monte-Carlo standard errors (0.0146 near alpha = 0.05): a procedure at its nominal rate fails
about once in 700 runs. `bench/bench_ladder.py` runs more ladders and harder cells.

The development loop checks each rate over S/4 ladders (the tolerance widens with it: the same
three standard errors); the full count runs marked slow, in CI.
"""

from __future__ import annotations

import pytest

from tlmsearch.ladders.simulate import simulate

S = 2000
LADDERS = [pytest.param(S // 4, id="S/4"), pytest.param(S, id="S", marks=pytest.mark.slow)]
ALPHA = 0.05
COMPUTE = (1e12, 1e13, 1e14)
SD = (0.02, 0.012, 0.007)


@pytest.mark.parametrize("ladders", LADDERS)
def test_linear_gain_is_covered_at_least_90_percent(ladders: int):
    res = simulate(COMPUTE, SD, seeds=4, slope=0.01, target_compute=1e17, ladders=ladders, alpha=ALPHA, seed=11)
    assert res.slope_coverage >= 0.90
    assert res.target_coverage >= 0.90
    assert res.trend_rate > 0.2  # it does find a real trend some of the time (power, not a bound)


@pytest.mark.parametrize("ladders", LADDERS)
def test_constant_gain_is_not_reported_as_trend_more_often_than_alpha(ladders: int):
    res = simulate(COMPUTE, SD, seeds=4, slope=0.0, ladders=ladders, alpha=ALPHA, seed=12)
    assert res.trend_rate <= ALPHA + res.tolerance(ALPHA)


@pytest.mark.parametrize("ladders", LADDERS)
def test_the_textbook_interval_fails_the_same_checks(ladders: int):
    """The checks can fail: the textbook interval (each se taken as known, a normal critical
    value) calls a constant gain a trend far more often than alpha at 2 seeds a point, and
    covers a linear truth less than 90 % of the time."""
    null = simulate(COMPUTE, SD, seeds=2, slope=0.0, ladders=ladders // 2, alpha=ALPHA, seed=13, critical="normal")
    assert null.trend_rate > ALPHA + null.tolerance(ALPHA)
    assert null.slope_coverage < 0.90
    same = simulate(COMPUTE, SD, seeds=2, slope=0.0, ladders=ladders // 2, alpha=ALPHA, seed=13)
    assert same.trend_rate <= ALPHA + same.tolerance(ALPHA)


def test_unknown_critical_value_is_refused():
    with pytest.raises(ValueError, match="critical='z' is not allowed"):
        simulate(COMPUTE, SD, seeds=4, slope=0.0, ladders=1, critical="z")


def test_simulate_refuses_mismatched_lengths():
    with pytest.raises(ValueError, match="one entry per point"):
        simulate(COMPUTE, SD[:2], seeds=4, slope=0.0, ladders=1)
