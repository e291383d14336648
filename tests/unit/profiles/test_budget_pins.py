"""`Budget` and the exact-sum projection pinned to values worked out by hand (issue 51).

Each projection below is written out step by step: scale to the total, clamp by water-filling,
floor, then hand the spare units to the largest fractional parts (ties to the larger raw width,
then the earlier layer).
"""

from __future__ import annotations

import pytest

from tlmsearch.errors import ConfigError
from tlmsearch.profiles.budget import Budget, project_to_budget, project_to_total


def test_uniform_is_the_base_width_at_every_layer() -> None:
    assert Budget(4, 96, multiple_of=32).uniform() == (96, 96, 96, 96)
    assert Budget(1, 7).uniform() == (7,)


def test_usable_widths_and_total_by_hand() -> None:
    b = Budget(3, 64, multiple_of=16, min_width=20, max_width=100)
    assert (b.total, b.lo, b.hi) == (192, 32, 96)  # 20 rounded up to 32, 100 down to 96
    b = Budget(3, 64, multiple_of=16)
    assert (b.total, b.lo, b.hi) == (192, 16, 192)  # no max: one layer may hold the total
    assert Budget(2, 64, multiple_of=16, min_width=16, max_width=64).lo == 16  # already multiples
    assert Budget(2, 64, multiple_of=16, min_width=16, max_width=64).hi == 64


@pytest.mark.parametrize(
    ("widths", "total", "valid"),
    [
        ((96, 64, 32), None, True),  # the upper width bound itself, and the lower
        ((96, 96, 0), None, False),  # 0 < lo
        ((112, 48, 32), None, False),  # 112 > hi = 96 (sum still 192)
        ((80, 80, 32), None, True),
        ((100, 60, 32), None, False),  # within [lo, hi] and summing to 192, not multiples of 16
        ((64, 64), None, False),  # two widths for three layers
        ((64, 64, 64, 0), None, False),
        ((96.0, 64, 32), None, False),  # a float is not a width
        ((64, 64, 64), None, True),
        ((64, 64, 48), None, False),  # 176 != 192
        ((96, 96, 96), 288, True),  # another total: all at the upper bound
        ((96, 96, 96), None, False),
        ((64, 64, 64), 288, False),
        ((32, 32, 32), 96, True),  # all at the lower bound
    ],
)
def test_is_valid_at_the_width_bounds(widths: tuple[int, ...], total: int | None, valid: bool) -> None:
    b = Budget(3, 64, multiple_of=16, min_width=20, max_width=100)
    assert b.is_valid(widths, total) is valid


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_width": 0}, "budget: min_width=0 must be a positive integer"),
        ({"max_width": 0}, "budget: max_width=0 must be a positive integer"),
        ({"n_layers": 0}, "budget: n_layers=0 must be a positive integer"),
        ({"multiple_of": 0}, "budget: multiple_of=0 must be a positive integer"),
        ({"base_width": 70, "multiple_of": 16}, r"base_width=70 is not a multiple of multiple_of=16; use e\.g\. 64$"),
        ({"base_width": 8, "multiple_of": 16}, r"use e\.g\. 16$"),  # rounds to 0 multiples: at least one
        ({"min_width": 65, "max_width": 64}, "min_width=65 > max_width=64"),
        ({"max_width": 63}, r"must lie within the usable widths \[1, 63\]"),
        ({"min_width": 65}, r"must lie within the usable widths \[65, 192\]"),
    ],
)
def test_refused_budgets_name_the_field(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Budget(**{"n_layers": 3, "base_width": 64, **kwargs})


def test_the_feasible_edges_are_accepted() -> None:
    assert Budget(3, 64, min_width=64, max_width=64).uniform() == (64, 64, 64)  # min = max = base
    assert Budget(3, 64, min_width=64).lo == 64
    assert Budget(3, 64, max_width=64).hi == 64


def test_projection_by_hand_with_a_spare_unit() -> None:
    # [1, 1, 2] scaled to 30: [7.5, 7.5, 15]; floors [7, 7, 15] leave 1 unit; the two halves tie
    # on fraction and raw width, so the earlier layer takes it
    assert project_to_budget([1, 1, 2], Budget(3, 10)) == (8, 7, 15)
    # a zero width stays at lo = 1; the rest share 29: [14.5, 14.5] -> the earlier takes the unit
    assert project_to_budget([0, 1, 1], Budget(3, 10)) == (1, 15, 14)


def test_projection_by_hand_clamped_at_the_upper_width() -> None:
    # units of 32: total 12, widths in [1, 5]. [4, 1, 1, 1] scaled: [6.86, 1.71, 1.71, 1.71];
    # the first clamps at 5 and the other three share 7: 2.33 each -> floors [5, 2, 2, 2] and the
    # spare unit to the earliest of the three tied layers
    b = Budget(4, 96, multiple_of=32, max_width=160)
    assert project_to_budget([4, 1, 1, 1], b) == (160, 96, 64, 64)


def test_projection_by_hand_clamped_at_the_lower_width() -> None:
    # total 90, widths in [20, 90]: [10, 1, 1] scaled is [75, 7.5, 7.5]; the two small ones clamp
    # at 20 and the first takes the remaining 50
    assert project_to_budget([10, 1, 1], Budget(3, 30, min_width=20)) == (50, 20, 20)


def test_spare_units_go_by_fraction_then_to_the_earlier_layer() -> None:
    # [1, 2, 2, 1] scaled to 12: [2, 4, 4, 2] exactly; scaled to 11 (project_to_total):
    # [1.83, 3.67, 3.67, 1.83] -> floors [1, 3, 3, 1] leave 3 units: fractions .83 first (the
    # two outer layers, tied), then .67 to the earlier inner layer
    assert project_to_total([1, 2, 2, 1], Budget(4, 3), 11) == (2, 4, 3, 2)
    # fractions equal, raw widths not: [3, 1, 1, 3] of 7 -> [2.625, 0.875, 0.875, 2.625]:
    # clamped at 1 the middle two hold 2, the outer share 5 as 2.5 each; the tie on fraction
    # and raw width goes to the earlier
    assert project_to_total([3, 1, 1, 3], Budget(4, 2), 7) == (3, 1, 1, 2)


def test_values_within_a_billionth_of_each_other_count_as_tied() -> None:
    # scaled to 30 the widths are their own values (they sum to 30). To 9 decimals they are
    # [10.5, 11.5, 8.0]: floors [10, 11, 8] leave 1 unit, the tie of .5 goes to the larger raw
    # width (the second). Read to 10 decimals the third would be 7.9999999996 and take a unit,
    # and the first's .5000000003 would beat the second's .5000000001.
    assert project_to_budget([10.5000000003, 11.5000000001, 7.9999999996], Budget(3, 10)) == (10, 12, 8)
    # to 9 decimals [10.500000003, 11.500000001, 7.999999996]: floors [10, 11, 7] leave 2 units,
    # the largest fractions first (.999999996, then .500000003); to 8 decimals the first two
    # would tie at .5 and the third be 8.0
    assert project_to_budget([10.500000003, 11.500000001, 7.999999996], Budget(3, 10)) == (11, 11, 8)


def test_a_valid_profile_is_returned_unchanged_and_an_invalid_one_projected() -> None:
    b = Budget(3, 64, multiple_of=16, max_width=100)
    assert project_to_budget([96, 64, 32], b) == (96, 64, 32)
    assert project_to_total([96, 96, 96], b, 288) == (96, 96, 96)
    # integers, but not a profile of the budget: 100 is above hi = 96 and not a multiple
    assert project_to_budget([100, 60, 32], b) == (96, 64, 32)


@pytest.mark.parametrize("total", [48, 288])
def test_projection_reaches_the_ends_of_the_allowed_totals(total: int) -> None:
    b = Budget(3, 64, multiple_of=16, max_width=100)  # widths in [16, 96]: totals in [48, 288]
    assert project_to_total([5, 1, 2], b, total) == (total // 3,) * 3


@pytest.mark.parametrize("total", [32, 304, 200])
def test_projection_refuses_a_total_outside_the_budget(total: int) -> None:
    b = Budget(3, 64, multiple_of=16, max_width=100)
    with pytest.raises(ConfigError, match=r"multiples of 16 in \[48, 288\]"):
        project_to_total([1, 1, 1], b, total)


def test_the_rounding_takes_a_unit_back_when_the_floors_overshoot() -> None:
    # At totals near 1e13 units the water-fill's scale (a float near 690) moves its one free
    # width by about 1.1 units per step of the float, so the filled widths can sum to 1.02 units
    # over the total: the floors then sum to total + 1 and the rounding must take a unit back
    # from the one layer above lo (found by a search over budgets; the others are 0 -> lo = 1).
    b = Budget(8949, 1026344702)
    widths = project_to_budget([1.2151932700360987e300] + [0.0] * 8948, b)
    assert widths[0] == b.total - 8948
    assert set(widths[1:]) == {1}
    assert b.is_valid(widths)
