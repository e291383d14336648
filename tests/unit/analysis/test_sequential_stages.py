"""A verification extended after its last look (`analysis.sequential_stages`,
`analysis.sequential_extend`): the new stage's boundaries against an independent computation on
hand-worked small cases, the decision over a history, and which extensions are refused."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from tlmsearch.analysis import sequential as sq
from tlmsearch.analysis.decision import OUTCOMES
from tlmsearch.analysis.sequential_bounds import critical_table, spent, z_boundaries
from tlmsearch.analysis.sequential_extend import continued, decided, recorded
from tlmsearch.analysis.sequential_stages import Stage, history_table, z_continue
from tlmsearch.errors import ConfigError


def upper_after(c1: float, c2: float, rho: float) -> float:
    """P(Z1 < c1, Z2 >= c2) for standard normals of correlation rho (one-dimensional quadrature)."""
    s = math.sqrt(1.0 - rho * rho)
    value, _ = integrate.quad(
        lambda x: stats.norm.pdf(x) * stats.norm.sf((c2 - rho * x) / s), -np.inf, c1, epsabs=1e-13
    )
    return value


def test_nothing_fixed_is_the_one_design_integration() -> None:
    f = [0.25, 0.5, 0.75, 1.0]
    inc = np.diff(np.concatenate([[0.0], spent(np.array(f), 0.05, "obf")]))
    assert np.allclose(z_continue(f, [], inc), z_boundaries(f, 0.05, "obf"), atol=1e-9)
    z = z_boundaries(f, 0.05, "obf")  # fixing the first two at their own values changes nothing
    assert np.allclose(z_continue(f, z[:2], inc[2:]), z, atol=1e-9)


def test_a_new_look_after_a_fixed_one_spends_exactly_its_increment() -> None:
    # looks at half and all of the information; the first boundary given, the second spends 0.03
    z = z_continue([0.5, 1.0], [2.5], [0.03])
    assert z[0] == 2.5
    assert upper_after(2.5, float(z[1]), math.sqrt(0.5)) == pytest.approx(0.03, abs=1e-6)


def test_history_table_hand_worked_one_candidate() -> None:
    # a fixed verification on 4 seeds at alpha 0.05, extended to 8 seeds with the history at 0.1
    table = history_table((4, 8), (Stage(4, 0.05),), 0.1, "obf", 1, False)
    assert table[1, 0] == pytest.approx(stats.t.isf(0.05, 3), abs=1e-9)  # the fixed test, unchanged
    z1 = stats.norm.isf(0.05)  # the z value of that t boundary's tail
    z2 = optimize.brentq(lambda c: upper_after(z1, c, math.sqrt(4 / 8)) - 0.05, 0.0, 5.0, xtol=1e-12)
    # the new look spends exactly the 0.05 the history adds (its z value's crossing probability to
    # 1e-6; the boundary itself to the integration grid's 1e-5)
    z_new = stats.norm.isf(stats.t.sf(table[1, 1], 7))
    assert upper_after(z1, z_new, math.sqrt(4 / 8)) == pytest.approx(0.05, abs=1e-6)
    assert table[1, 1] == pytest.approx(stats.t.isf(stats.norm.sf(z2), 7), abs=1e-5)
    assert np.isinf(table[0]).all()


def test_history_keeps_the_first_designs_calibrated_boundaries() -> None:
    first = critical_table((2, 4), 0.05, "obf", 3, True)
    table = history_table((2, 4, 8, 12), (Stage(4, 0.05),), 0.1, "obf", 3, True)
    assert np.array_equal(table[:, :2], first)
    assert np.all(np.diff(table[1:, 2:], axis=0) > 0)  # Holm's rows rise in r at the new looks too


def test_stage_validation_refuses_a_history_that_spends_nothing_more() -> None:
    with pytest.raises(ConfigError, match="alpha must rise"):
        sq.Design(looks=(2, 4, 8), alpha=0.05, stages=(Stage(4, 0.05),))
    with pytest.raises(ConfigError, match="one of the looks"):
        sq.Design(looks=(2, 4, 8), alpha=0.1, stages=(Stage(5, 0.05),))
    d = sq.Design(looks=(2, 4, 8, 12), alpha=0.1, stages=(Stage(4, 0.05),))
    assert sq.Design.from_dict(d.to_dict()) == d
    assert d.stage_looks() == [(2, 4), (8, 12)]
    assert [d.alpha_through(k) for k in range(4)] == [0.05, 0.05, 0.1, 0.1]
    assert "the whole history spends alpha 0.1" in d.describe()


def test_decision_over_a_history() -> None:
    # one candidate, gains whose t statistic stays under the fixed test at 4 seeds and clears the
    # extension's boundary at 8
    d1 = sq.Design(looks=(4,), alpha=0.05, calibrate=False)
    hist = sq.Design(looks=(4, 8), alpha=0.1, stages=(Stage(4, 0.05),), calibrate=False)
    g = np.array([[0.01, -0.004, 0.008, 0.0, 0.012, 0.009, 0.011, 0.01]])
    t4 = g[0, :4].mean() / (g[0, :4].std(ddof=1) / 2.0)
    t8 = g[0].mean() / (g[0].std(ddof=1) / math.sqrt(8))
    crit = hist.critical(1)
    assert t4 < crit[1, 0] and t8 >= crit[1, 1]  # the hand-made case is what it says
    assert OUTCOMES[int(sq.decide(g[:, :4], d1).outcome)] == "inconclusive"
    res = sq.decide(g, hist)
    assert OUTCOMES[int(res.outcome)] == "better" and int(res.decided_look[0]) == 1
    assert hist.alpha_through(int(res.last_look)) == 0.1
    early = sq.decide(g, hist, through=1)  # through the first stage: the first verification's decision
    assert OUTCOMES[int(early.outcome)] == "inconclusive"


SEQ_DOC = {
    "steps": 40,
    "complete": True,
    "decision_seeds": [1, 2, 3, 4],
    "margin": 0.01,
    "alpha": 0.05,
    "sequential": {
        "design": {"looks": [2, 4], "margin": 0.01, "alpha": 0.05, "spending": "obf"},
        "seeds": [1, 2, 3, 4],
        "looks_taken": 2,
    },
}
FIXED_DOC = {
    "steps": 40,
    "complete": True,
    "pilot_seeds": [1, 2, 3],
    "decision_seeds": [4, 5, 6, 7, 8],
    "margin": 0.01,
    "alpha": 0.05,
}


def test_an_extension_at_the_same_alpha_is_refused_with_what_to_do() -> None:
    request = sq.design(12, 3)  # looks at 4, 8, 12: the joint study's re-planning
    with pytest.raises(ConfigError, match="spend it twice") as e:
        continued(SEQ_DOC, request, range(1, 13), run="runs/x")
    text = str(e.value)
    assert "--alpha 0.1" in text and "tlmsearch report runs/x" in text and "\n" not in text


def test_an_extension_with_more_alpha_is_a_new_stage() -> None:
    design, seeds = continued(SEQ_DOC, sq.design(12, 3, alpha=0.1), list(range(1, 13)), run="runs/x")
    assert design.looks == (2, 4, 8, 12) and design.alpha == 0.1
    assert design.stages == (Stage(4, 0.05, "obf"),)
    assert seeds == list(range(1, 13))
    # the same request again (a resume, or a re-run once done) is that design, not a third stage
    doc = {**SEQ_DOC, "complete": False, "sequential": {"design": design.to_dict(), "seeds": seeds}}
    assert continued(doc, sq.design(12, 3, alpha=0.1), seeds, run="runs/x")[0] == design
    done = {**doc, "complete": True}
    assert continued(done, sq.design(12, 3, alpha=0.1), seeds, run="runs/x")[0] == design
    # and a further extension stacks a third stage on the finished two
    third, _ = continued(done, sq.design(20, 2, alpha=0.15), list(range(1, 21)), run="runs/x")
    assert third.looks == (2, 4, 8, 12, 20) and third.stages == (Stage(4, 0.05), Stage(12, 0.1))


def test_the_same_request_and_no_history_are_left_alone() -> None:
    same, seeds = continued(SEQ_DOC, sq.design(4, 2), [1, 2, 3, 4], run="runs/x")
    assert same == sq.Design.from_dict(SEQ_DOC["sequential"]["design"]) and not same.stages
    fresh = sq.design(12, 3)
    assert continued({}, fresh, range(1, 13), run="runs/x")[0] is fresh
    unfinished = {**SEQ_DOC, "complete": False}
    assert continued(unfinished, fresh, range(1, 13), run="runs/x")[0] is fresh
    assert decided(SEQ_DOC) and not decided(unfinished) and not decided({})


@pytest.mark.parametrize(
    ("request_", "seeds", "message"),
    [
        (sq.design(12, 3, alpha=0.1), range(5, 17), "do not continue"),
        (sq.design(12, 3, alpha=0.1, margin=0.02), range(1, 13), "margin"),
        (sq.design(4, 2, alpha=0.1), range(1, 5), "no seeds beyond"),
    ],
)
def test_extensions_that_cannot_be_accounted_for_are_refused(request_: sq.Design, seeds: range, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        continued(SEQ_DOC, request_, list(seeds), run="runs/x")


def test_a_fixed_verification_extended_is_a_one_look_first_stage() -> None:
    assert recorded(FIXED_DOC) == (sq.Design(looks=(5,)), [4, 5, 6, 7, 8])
    request = sq.Design(looks=(12,))
    with pytest.raises(ConfigError, match="spent alpha 0.05"):
        continued(FIXED_DOC, request, list(range(4, 16)), run="runs/x")
    design, _ = continued(FIXED_DOC, sq.Design(looks=(12,), alpha=0.1), list(range(4, 16)), run="runs/x")
    assert design.looks == (5, 12) and design.stages == (Stage(5, 0.05, "obf"),)
    with pytest.raises(ConfigError, match="--interval t"):
        continued(FIXED_DOC, sq.Design(looks=(12,), alpha=0.1), list(range(4, 16)), run="runs/x", method="bootstrap")


@pytest.mark.slow
def test_simulated_histories_stay_within_their_level_and_replanning_does_not() -> None:
    from tlmsearch.analysis.sequential_sim import simulate_extension

    # a fixed verification on 17 seeds re-run on 37 (--max-seeds 20 -> 40), 8 candidates equal to cosine
    n, truth, sd = 4000, [0.0] * 8, 0.0201
    tol = 3.0 * math.sqrt(0.05 * 0.95 / n)
    first = sq.Design(looks=(17,))
    replan = simulate_extension(truth, sd, first, sq.Design(looks=(37,)), how="replan", n_studies=n, seed=1)
    assert replan.better > 0.05 + tol  # today's re-planning: alpha spent twice
    planned = sq.Design(looks=(17, 37), alpha=0.05, stages=(Stage(17, 0.025),))
    staged = simulate_extension(
        truth, sd, sq.Design(looks=(17,), alpha=0.025), planned, how="stage", n_studies=n, seed=1
    )
    assert staged.better <= 0.05 + tol
    at_margin = [0.01] + [0.0] * 7  # a "near_optimal" is false
    staged = simulate_extension(
        at_margin, sd, sq.Design(looks=(17,), alpha=0.025), planned, how="stage", n_studies=n, seed=2
    )
    assert staged.near_optimal <= 0.05 + tol
