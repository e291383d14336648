"""The verdict's error rates and power, simulated under the tool's own procedure (a variance-only
pilot, the seed plan, the cap, one Holm-corrected decision), with fixed RNG seeds.

Each rate is over S simulated studies; its Monte-Carlo standard error is at most
sqrt(0.05 * 0.95 / S) near alpha = 0.05, and the stated tolerance is 3 of those (0.0046 at
S = 20000): a true rate at alpha fails such a check about once in 700 runs, a rate of
alpha + 0.01 almost always. The reference spread: the committed reference run (cpu-s,
Shakespeare, 300 steps) has a seed-to-seed sd of about 0.015 nats per profile and a paired
linear-vs-cosine sd of 0.0052 nats (2 seeds, stream initialisation); its re-verification with
keyed initialisation measured a pooled paired sd of 0.0186 nats over 4 candidates (3 pilot
seeds); all three are used.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tlmsearch.analysis.decision import OUTCOMES, decide, holm, p_values, summarise
from tlmsearch.analysis.planning import plan_seeds, seeds_to_decide
from tlmsearch.analysis.simulation import simulate
from tlmsearch.analysis.verdict import ProfileResult, verdict
from tlmsearch.errors import ConfigError

ALPHA = 0.05
MARGIN = 0.01
S = 20_000
TOL = 3 * math.sqrt(ALPHA * (1 - ALPHA) / S)  # 0.0046
REFERENCE_SD = 0.015  # nats, per seed at cpu-s (conservative for the paired sd)
REFERENCE_PAIRED_SD = 0.0052  # nats, linear vs cosine in runs/reference/quickstart (first verify)
REFERENCE_PILOT_SD = 0.0186  # nats, pooled over 4 candidates, the re-verification's pilot (seeds 1-3)


@pytest.mark.parametrize("m", [1, 2, 5])
@pytest.mark.parametrize("sd", [REFERENCE_PAIRED_SD, 0.01, REFERENCE_SD, REFERENCE_PILOT_SD])
def test_all_profiles_equal_better_at_most_alpha(m: int, sd: float) -> None:
    sim = simulate([0.0] * m, sd, n_studies=S, margin=MARGIN, alpha=ALPHA, seed=100 + m)
    assert sim.rate("better") <= ALPHA + TOL, (sim.rate("better"), sim.mc_se("better"))


@pytest.mark.parametrize("m", [1, 2, 5])
@pytest.mark.parametrize("sd", [REFERENCE_PAIRED_SD, 0.01, REFERENCE_SD, REFERENCE_PILOT_SD])
def test_a_candidate_one_margin_better_is_near_optimal_at_most_alpha(m: int, sd: float) -> None:
    sim = simulate([MARGIN] + [0.0] * (m - 1), sd, n_studies=S, margin=MARGIN, alpha=ALPHA, seed=200 + m)
    assert sim.rate("near_optimal") <= ALPHA + TOL, (sim.rate("near_optimal"), sim.mc_se("near_optimal"))


@pytest.mark.parametrize("sd", [REFERENCE_PAIRED_SD, REFERENCE_SD, REFERENCE_PILOT_SD])
@pytest.mark.parametrize("m", [2, 5])
def test_a_true_three_percent_gain_is_found_at_the_planned_seeds(m: int, sd: float) -> None:
    sim = simulate([0.03] + [0.0] * (m - 1), sd, n_studies=S, margin=MARGIN, alpha=ALPHA, seed=300 + m)
    assert sim.rate("better") >= 0.80, (sim.rate("better"), float(sim.n_seeds.mean()))
    assert sim.rate("near_optimal") <= ALPHA + TOL


def test_equal_profiles_are_usually_shown_near_optimal_when_the_plan_is_not_capped() -> None:
    sim = simulate([0.0, 0.0], REFERENCE_PAIRED_SD, n_studies=S, margin=MARGIN, alpha=ALPHA, seed=7)
    assert sim.rate("near_optimal") >= 0.75  # the plan's target is 80% (joint, from a noisy 3-seed pilot)


def test_fixed_two_seeds_never_call_a_true_three_percent_gain_near_optimal() -> None:
    # the old rule said "near-optimal" 87% of the time here; now it may only be inconclusive
    sim = simulate([0.03, 0.0], REFERENCE_SD, n_studies=S, fixed_seeds=2, seed=8)
    assert sim.rate("near_optimal") <= ALPHA + TOL
    assert sim.rate("inconclusive") > 0.5


def test_one_seed_is_always_inconclusive() -> None:
    sim = simulate([0.0, 0.0], REFERENCE_SD, n_studies=2000, fixed_seeds=1, seed=9)
    assert sim.rate("inconclusive") == 1.0


def test_reusing_the_pilot_in_the_decision_would_be_liberal() -> None:
    """Why the planner keeps the pilot out of the decision: the classic internal pilot inflates
    the false "better" rate at these sizes (one candidate, paired sd 0.01: about 0.080)."""
    kept_out = simulate([0.0], 0.01, n_studies=40_000, seed=10)
    reused = simulate([0.0], 0.01, n_studies=40_000, reuse_pilot=True, seed=10)
    assert kept_out.rate("better") <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / 40_000)
    assert reused.rate("better") > ALPHA + 0.015


def test_the_simulation_decides_like_the_verdict_on_records() -> None:
    """The vectorised rule and `verdict` on ProfileResults agree study by study."""
    sim = simulate([0.012, 0.004, -0.01], 0.008, n_studies=60, margin=MARGIN, alpha=ALPHA, seed=11)
    rng = np.random.default_rng(12)
    seen = set()
    for i in range(60):
        a, n = int(sim.start[i]), int(sim.used[i])
        d = sim.gains[i, :, a : a + n]  # (m, n) log gains of the seeds that decide
        cos_loss = rng.normal(1.85, 0.01, n)
        res = [_profile("cosine", cos_loss)] + [_profile(f"knots:k={j}", cos_loss - d[j]) for j in range(d.shape[0])]
        v = verdict(res, margin=MARGIN, alpha=ALPHA)
        assert v.outcome == OUTCOMES[int(sim.outcome[i])]
        seen.add(v.outcome)
    assert len(seen) >= 2  # the check saw more than one outcome


def _profile(label: str, loss: np.ndarray) -> ProfileResult:
    return ProfileResult(
        label=label,
        widths=(64, 64),
        baseline="cosine" if label == "cosine" else None,
        loss={s: float(x) for s, x in enumerate(loss)},
        ppl={s: math.exp(float(x)) for s, x in enumerate(loss)},
        profile={"family": label.split(":")[0], "params": {}},
    )


# ----------------------------------------------------------------------------- the rule, exactly


def test_holm_adjusted_p_values_known_answer() -> None:
    # p = (0.01, 0.04, 0.03): sorted 0.01, 0.03, 0.04 -> 3*0.01, max(0.03, 2*0.03), max(0.06, 0.04)
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    np.testing.assert_allclose(holm([[0.5, 0.001], [0.9, 0.8]]), [[0.5, 0.002], [1.0, 1.0]])


def test_one_sided_p_values_match_scipy_ttest() -> None:
    from scipy import stats

    x = np.array([0.012, 0.02, 0.004, 0.017, 0.009])
    mean, se, df = summarise(x[None, :])
    assert p_values(mean, se, df, 0.0, "greater")[0] == pytest.approx(
        stats.ttest_1samp(x, 0.0, alternative="greater").pvalue
    )
    assert p_values(mean, se, df, 0.00995, "less")[0] == pytest.approx(
        stats.ttest_1samp(x, 0.00995, alternative="less").pvalue
    )


def test_known_answers_of_the_rule() -> None:
    # clearly better; clearly within; too noisy; one seed (no spread) is never decided
    out = decide(
        [[0.05], [0.0], [0.005], [0.0]],
        [[0.001], [0.001], [0.01], [np.nan]],
        [[4.0], [4.0], [4.0], [0.0]],
        margin=MARGIN,
        alpha=ALPHA,
    )
    assert [OUTCOMES[int(k)] for k in out["outcome"]] == ["better", "near_optimal", "inconclusive", "inconclusive"]
    # exactly on the margin with no noise: shown better (its bound is above 0), never "within"
    edge = decide([math.log1p(MARGIN)], [0.0], [4.0], margin=MARGIN, alpha=ALPHA)
    assert OUTCOMES[int(edge["outcome"])] == "better" and not edge["within_margin"][0]


def test_planner_known_values_and_refusals() -> None:
    from scipy import stats

    plan = plan_seeds(sd=REFERENCE_SD, pilot_seeds=3, n_candidates=2, max_seeds=40)
    n = plan.final_seeds
    need = lambda k: (stats.t.ppf(1 - ALPHA / 2, k - 1) + stats.t.ppf(0.8**0.5, k - 1)) * REFERENCE_SD / math.sqrt(k)  # noqa: E731
    assert need(n) <= math.log1p(MARGIN) < need(n - 1)  # the smallest n that meets the target
    assert not plan.capped and plan.n_seeds == n + 3
    capped = plan_seeds(sd=REFERENCE_SD, pilot_seeds=3, n_candidates=2, max_seeds=10)
    assert capped.capped and capped.n_seeds == 10 and capped.half_width_margins > plan.half_width_margins
    assert "capped by max_seeds" in capped.describe()
    pilot = plan_seeds([[0.028, 0.021, 0.025], [-0.003, 0.0, 0.001]])
    assert pilot.pilot_seeds == 3 and pilot.n_candidates == 2 and pilot.sd == pytest.approx(0.0035119, rel=1e-4)
    with pytest.raises(ConfigError, match="max_seeds=3 leaves fewer than 2 seeds after the 3 pilot seeds"):
        plan_seeds(sd=0.01, pilot_seeds=3, max_seeds=3)
    with pytest.raises(ConfigError, match="margin=0 must lie in"):
        plan_seeds(sd=0.01, pilot_seeds=3, margin=0)
    with pytest.raises(ConfigError, match="at least 2 seeds"):
        plan_seeds([[0.01]])


def test_seeds_to_decide() -> None:
    # a candidate 3% better with sd 0.015: a handful of seeds shows it better
    n_better = seeds_to_decide([math.log(1.03)], [0.015], margin=MARGIN)
    assert n_better is not None and 2 <= n_better <= 10
    # no spread estimate (one seed): no answer
    assert seeds_to_decide([0.0], [math.nan], margin=MARGIN) is None
    # equal profiles: showing them within the margin takes more seeds as the spread grows
    a = seeds_to_decide([0.0, 0.0], [0.005, 0.005], margin=MARGIN)
    b = seeds_to_decide([0.0, 0.0], [0.015, 0.015], margin=MARGIN)
    assert a is not None and b is not None and a < b
