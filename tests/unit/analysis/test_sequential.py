"""The group-sequential verification (`tlmsearch.analysis.sequential`): boundaries against
published values, the decision rule on hand-made studies, and error rates simulated against
known truth with fixed RNG seeds (2,000-5,000 studies: tolerances of 3 Monte-Carlo SEs, so that
a procedure off by a point or two fails them; the wrong procedure, nominal alpha at each look,
must be caught). The full figures (20,000 studies a cell) are `bench/bench_sequential.py`'s."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tlmsearch.analysis import sequential as sq
from tlmsearch.analysis import sequential_sim as sim
from tlmsearch.analysis.decision import OUTCOMES
from tlmsearch.errors import ConfigError

ALPHA, MARGIN = 0.05, 0.01


def tol(n: int, p: float = ALPHA) -> float:
    return 3.0 * math.sqrt(p * (1.0 - p) / n)


def test_obrien_fleming_boundaries_match_published_values() -> None:
    # Lan-DeMets O'Brien-Fleming spending, 5 equally spaced looks, one-sided 0.025 (gsDesign sfLDOF)
    z = sq.z_boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.025, "obf")
    assert np.allclose(z, [4.8769, 3.3569, 2.6803, 2.2898, 2.0310], atol=2e-3)


def test_pocock_boundaries_match_published_values() -> None:
    z = sq.z_boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.025, "pocock")
    assert np.allclose(z, [2.4380, 2.4268, 2.4101, 2.3966, 2.3859], atol=2e-3)


def test_one_look_is_the_fixed_t_test() -> None:
    from scipy import stats

    t = sq.t_boundaries((10,), 0.05, "obf")
    assert t[0] == pytest.approx(stats.t.isf(0.05, 9), rel=1e-9)


def test_spending_is_cumulative_and_reaches_alpha() -> None:
    for kind in ("obf", "pocock"):
        a = sq.spent(np.linspace(0, 1, 11), 0.05, kind)
        assert a[0] == 0.0 and a[-1] == pytest.approx(0.05) and np.all(np.diff(a) >= 0)


def test_look_schedule_and_refusals() -> None:
    assert sq.look_schedule(20, 4) == (5, 10, 15, 20)
    assert sq.look_schedule(5, 4) == (2, 3, 4, 5)  # the first look has at least 2 seeds
    assert sq.look_schedule(3, 4) == (2, 3)  # duplicates merged
    with pytest.raises(ConfigError, match="looks"):
        sq.look_schedule(20, 0)
    with pytest.raises(ConfigError, match="increase"):
        sq.Design(looks=(4, 4))
    with pytest.raises(ConfigError, match="spending"):
        sq.Design(looks=(4, 8), spending="haybittle")


def test_decided_candidates_stop_and_better_settles_the_study() -> None:
    d = sq.Design(looks=(4, 8, 12), calibrate=False)
    rng = np.random.default_rng(0)
    gains = np.empty((3, 12))
    gains[0] = 0.2 + rng.normal(0, 0.001, 12)  # far better: shown better at the first look
    gains[1] = -0.2 + rng.normal(0, 0.001, 12)
    gains[2] = 0.0 + rng.normal(0, 0.05, 12)
    res = sq.decide(gains, d)
    assert OUTCOMES[int(res.outcome)] == "better"
    assert res.shown_better[0] and res.decided_look[0] == 0
    assert int(res.last_look) == 0 and list(res.stop_look) == [0, 0, 0]  # the outcome is settled
    res = sq.decide(gains, d, settle=False)  # only decided candidates stop
    assert int(res.stop_look[0]) == 0 and int(res.stop_look[2]) == 2 and int(res.last_look) == 2


def test_values_after_a_stop_are_never_read() -> None:
    d = sq.Design(looks=(4, 8, 12), calibrate=False)
    rng = np.random.default_rng(1)
    gains = np.vstack([-0.2 + rng.normal(0, 0.001, 12), rng.normal(0, 0.05, 12)])
    first = sq.decide(gains, d, settle=False)
    stopped = int(first.stop_look[0])
    holed = gains.copy()
    holed[0, d.looks[stopped] :] = np.nan  # a candidate that stopped trains no more seeds
    again = sq.decide(holed, d, settle=False)
    assert int(again.outcome) == int(first.outcome)
    assert np.array_equal(again.stop_look, first.stop_look)


def test_through_gives_the_decision_at_an_earlier_look() -> None:
    d = sq.design(12, 3)
    gains = np.random.default_rng(2).normal(0.0, 0.02, (2, 12))
    res = sq.decide(gains[:, :4], d, through=1)
    assert int(res.last_look) == 0


@pytest.mark.parametrize("spending", ["obf", "pocock"])
@pytest.mark.slow
def test_false_better_at_most_alpha(spending: str) -> None:
    # one candidate equal to cosine, few seeds, 5 looks: where the t conversion matters most
    d = sq.design(10, 5, spending=spending)
    s = sim.simulate([0.0], 0.02, d, n_studies=5000, seed=11)
    assert s.better <= ALPHA + tol(5000), s


def test_nominal_alpha_at_each_look_is_caught() -> None:
    # the deliberately wrong procedure: no spending, alpha at each of 5 looks
    d = sq.design(10, 5, spending="nominal")
    s = sim.simulate([0.0], 0.02, d, n_studies=5000, seed=11)
    assert s.better > ALPHA + tol(5000), s


@pytest.mark.slow
def test_uncalibrated_t_conversion_exceeds_the_level_at_few_seeds() -> None:
    # the plain "significance level" conversion of z boundaries to t is liberal at 2-10 seeds;
    # the calibration brings one test back to its level
    looks = (2, 4, 6, 8, 10)
    paths = sq.null_t_paths(looks, 100_000, seed=3)
    plain = (paths >= sq.t_boundaries(looks, ALPHA, "obf")).any(axis=1).mean()
    level = float(sq.calibrated_levels(looks, [ALPHA], "obf")[0])
    fixed = (paths >= sq.t_boundaries(looks, level, "obf")).any(axis=1).mean()
    assert plain > ALPHA + tol(100_000)
    assert abs(fixed - ALPHA) <= tol(100_000)


def test_false_near_optimal_at_one_margin_at_most_alpha() -> None:
    # the others far worse: decided at once, they pass their alpha on (the hardest case)
    d = sq.design(40, 4)
    s = sim.simulate([MARGIN, -0.05, -0.05], 0.02, d, n_studies=4000, seed=12)
    assert s.near_optimal <= ALPHA + tol(4000), s


def test_power_and_seeds_at_a_three_percent_gain() -> None:
    d = sq.design(40, 4)
    s = sim.simulate([0.03, 0.0, 0.0], 0.02, d, n_studies=2000, seed=13)
    assert s.better >= 0.8
    assert s.seeds_per_profile < 0.6 * 40  # a clear gain stops the study early


@pytest.mark.slow
def test_plan_max_seeds_reaches_its_power() -> None:
    n = sim.plan_max_seeds(0.02, 2, 4, power=0.8, n_studies=1000, cap=200)
    assert 4 <= n < 200
    p = sim.power_near_optimal(0.02, 2, n, 4, n_studies=2000, seed=5)
    assert p >= 0.8 - tol(2000, 0.8)
