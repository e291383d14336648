"""Pins of the seed planner (`analysis/planning.py`): its numbers against a brute-force search
over n written from the module's formula, values worked out by hand (the sd limit of two seeds,
the bound of ladder8's third point: 3 pilot seeds of paired sd 0.0137 nats, one candidate, 12
seeds at most), the 10,000-seed search limit, the cap and its edges, the pairing's unpaired
count, and what `seeds_to_decide` keeps and refuses."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from tlmsearch.analysis.planning import (
    SEARCH_LIMIT,
    at_least,
    final_seeds,
    plan_seeds,
    sd_limits,
    seeds_for,
    seeds_to_decide,
)
from tlmsearch.errors import ConfigError

DELTA = math.log(1.01)  # the 1 % margin on the log scale


def brute_seeds(sd: float, effect: float, a1: float, power: float, limit: int = 2000) -> int:
    """Smallest n >= 2 with (t[1 - a1, n - 1] + t[power, n - 1]) sd / sqrt(n) <= effect, found n by n
    (-1: none up to `limit`)."""
    for n in range(2, limit + 1):
        if (stats.t.ppf(1 - a1, n - 1) + stats.t.ppf(power, n - 1)) * sd / math.sqrt(n) <= effect:
            return n
    return -1


def test_the_sd_limit_of_two_seeds_by_hand() -> None:
    # t[0.95, 1] = 6.313752, t[0.80, 1] = 1.376382: 0.01 x sqrt(2) / 7.690134 = 0.0018390
    limits = sd_limits(0.01, 0.05, 0.8, 2)
    assert limits[:2].tolist() == [0.0, 0.0]
    assert limits[2] == pytest.approx(0.0018390, abs=1e-7)


@pytest.mark.parametrize(
    ("sd", "m", "power"), [(0.0137, 1, 0.8), (0.0137, 2, 0.8), (0.02, 3, 0.9), (0.005, 1, 0.5), (0.0401, 5, 0.8)]
)
def test_needed_seeds_match_a_search_n_by_n(sd: float, m: int, power: float) -> None:
    # alpha / m per candidate, power ** (1 / m) each so that all m succeed together
    want = brute_seeds(sd, DELTA, 0.05 / m, power ** (1 / m))
    plan = plan_seeds(sd=sd, pilot_seeds=3, n_candidates=m, power=power, max_seeds=10_000)
    assert plan.needed == want and plan.final_seeds == want and not plan.capped
    assert int(seeds_for(sd, DELTA, alpha_one_sided=0.05 / m, power=power ** (1 / m))) == want


def test_ladder8_third_points_plan_by_hand() -> None:
    # one candidate (uniform against cosine), pilot sd 0.0137, 12 seeds at most: the target needs
    # 14 fresh seeds, the cap leaves 9; the bound t[0.95, 8] x 0.0137 / sqrt(9) =
    # 1.859548 x 0.0137 / 3 = 0.0084919 nats, 0.8534 of the margin log(1.01) = 0.0099503
    plan = plan_seeds(sd=0.0137, pilot_seeds=3, n_candidates=1, max_seeds=12)
    assert (plan.n_seeds, plan.final_seeds, plan.needed, plan.capped) == (12, 9, 14, True)
    assert plan.half_width == pytest.approx(0.0084919, abs=1e-7)
    assert plan.half_width_margins == pytest.approx(0.85343, abs=1e-5)
    assert plan.describe() == (
        "plan: 12 seeds per profile: a pilot of 3 (for the spread only), then 9 fresh seeds that decide: paired sd "
        "0.0137 nats over 1 candidate; the one-sided bounds will be +/-0.85x the 1.0% margin (alpha 0.05, power "
        "target 80%); capped by max_seeds (the target needs 14): expect an inconclusive answer more often"
    )


def test_the_default_cap_is_20_seeds_and_two_final_seeds_are_the_least() -> None:
    assert plan_seeds(sd=0.05, pilot_seeds=3).n_seeds == 20
    # max_seeds = pilot + 2 is allowed: two fresh seeds, the bound t[0.95, 1] x sd / sqrt(2)
    plan = plan_seeds(sd=0.01, pilot_seeds=3, max_seeds=5)
    assert plan.final_seeds == 2 and plan.capped
    assert plan.half_width == pytest.approx(6.313752 * 0.01 / math.sqrt(2), rel=1e-6)
    with pytest.raises(
        ConfigError, match=r"max_seeds=4 leaves fewer than 2 seeds after the 3 pilot seeds; allowed: >= 5"
    ):
        plan_seeds(sd=0.01, pilot_seeds=3, max_seeds=4)


def test_capped_only_when_the_need_exceeds_the_room_after_the_pilot() -> None:
    sd = 0.0137  # needs 14 fresh seeds
    assert not plan_seeds(sd=sd, pilot_seeds=3, max_seeds=17).capped  # room 14
    tight = plan_seeds(sd=sd, pilot_seeds=3, max_seeds=16)  # room 13 < 14 <= 16 + 3
    assert tight.capped and tight.final_seeds == 13


def test_zero_spread_still_plans_two_fresh_seeds() -> None:
    assert int(seeds_for(0.0, 0.01, alpha_one_sided=0.05, power=0.8)) == 2
    assert plan_seeds([[0.01, 0.01, 0.01]]).final_seeds == 2


def test_the_search_limit_is_10000_seeds() -> None:
    assert SEARCH_LIMIT == 10_000
    limits = sd_limits(DELTA, 0.05, 0.8, SEARCH_LIMIT + 1)
    at_limit, beyond = limits[SEARCH_LIMIT], (limits[SEARCH_LIMIT] + limits[SEARCH_LIMIT + 1]) / 2
    assert int(seeds_for(at_limit, DELTA, alpha_one_sided=0.05, power=0.8)) == SEARCH_LIMIT
    assert int(seeds_for(beyond, DELTA, alpha_one_sided=0.05, power=0.8)) == -1
    assert int(seeds_for(1.0, DELTA, alpha_one_sided=0.05, power=0.8)) == -1
    # beyond the limit the planner takes all the room there is and says so
    assert final_seeds(np.array([1.0]), margin=0.01, alpha=0.05, n_candidates=1, power=0.8, room=17).tolist() == [17]
    plan = plan_seeds(sd=1.0, pilot_seeds=3)
    assert plan.needed is None and plan.capped and plan.final_seeds == 17
    assert "(the target needs more than 10000)" in plan.describe()


def test_the_pilots_shape_and_the_power_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"at least 2 seeds to estimate the spread \(got 1\)"):
        plan_seeds([[0.01], [0.02]])  # two candidates of one seed each
    with pytest.raises(ConfigError, match="the pilot has 3 dimensions"):
        plan_seeds([[[0.01, 0.02], [0.0, 0.01]]])
    for power in (0.4, 1.0):
        with pytest.raises(ConfigError, match=rf"power={power} must lie in \[0.5, 1\)"):
            plan_seeds(sd=0.01, pilot_seeds=3, power=power)
    # the largest pilot sd sets the plan: sd of (0, 0.02, 0.04) = 0.02
    plan = plan_seeds([[0.0, 0.01, 0.0], [0.0, 0.02, 0.04]])
    assert plan.sd == pytest.approx(0.02) and plan.n_candidates == 2 and plan.pilot_seeds == 3


def test_a_plan_is_frozen_and_compares_without_its_pairing() -> None:
    plan = plan_seeds(sd=0.0137, pilot_seeds=3, max_seeds=12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.n_seeds = 5  # type: ignore[misc]
    assert dataclasses.replace(plan, correlation=0.5, unpaired_sd=0.02) == plan
    assert plan.unpaired_needed is None


def test_the_unpaired_count_follows_the_same_rule() -> None:
    plan = dataclasses.replace(
        plan_seeds(sd=0.0137, pilot_seeds=3, n_candidates=2, max_seeds=12), correlation=-0.2, unpaired_sd=0.0309
    )
    want = brute_seeds(0.0309, DELTA, 0.05 / 2, 0.8**0.5)
    assert plan.unpaired_needed == want
    assert plan.to_dict()["unpaired_needed"] == want
    assert f"(unpaired runs would need {want} fresh seeds)" in plan.describe()
    assert "paired sd 0.44x the unpaired 0.0309" in plan.describe()  # 0.0137 / 0.0309 = 0.443


def test_seeds_to_decide_keeps_only_candidates_that_can_be_shown_better() -> None:
    a1 = 0.05 / 2  # two candidates; each test at power 0.8 (not split among them)
    # candidate 1 sits at 0 (no number of seeds shows it better: left out); candidate 2 gains 0.02
    # nats, beyond the margin (so "all within" is out): only "candidate 2 better" is left
    assert seeds_to_decide([0.0, 0.02], [0.01, 0.01], margin=0.01) == brute_seeds(0.01, 0.02, a1, 0.8)
    # both inside the margin: the fewer of "the best shown better" and "all shown within"
    better = brute_seeds(0.01, 0.004, a1, 0.8)
    within = max(brute_seeds(0.01, DELTA, a1, 0.8), brute_seeds(0.01, DELTA - 0.004, a1, 0.8))
    assert better != within
    assert seeds_to_decide([0.0, 0.004], [0.01, 0.01], margin=0.01) == min(better, within)
    # none better: "all within" alone
    assert seeds_to_decide([0.0, -0.003], [0.01, 0.01], margin=0.01) == brute_seeds(0.01, DELTA, a1, 0.8)
    # past the search limit either way: None
    assert seeds_to_decide([0.0, 0.02], [1.0, 1.0], margin=0.01) is None
    with pytest.raises(ValueError):
        seeds_to_decide([0.0, 0.0], [0.01], margin=0.01)  # a mean without its sd


def test_at_least_raises_the_fresh_seeds_and_recomputes_the_bound() -> None:
    plan = plan_seeds(sd=0.0137, pilot_seeds=3, max_seeds=12)  # 9 fresh seeds
    assert at_least(plan, 9) is plan and at_least(plan, 2) is plan
    more = at_least(plan, 12)
    assert (more.n_seeds, more.final_seeds, more.pilot_seeds) == (15, 12, 3)
    # t[0.95, 11] = 1.795885: 1.795885 x 0.0137 / sqrt(12) = 0.0246036 / 3.464102 = 0.0071025
    assert more.half_width == pytest.approx(0.0071025, abs=1e-7)
