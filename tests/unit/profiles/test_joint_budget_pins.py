"""Pins of the joint budget's pieces (`profiles/joint_budget.py`) worked out by hand: the
weighted projection's widths on small budgets (a zero relative width, a shape given at any
scale), its refusal of a shape of the wrong length, how a head target snaps to its choices, and
`holds_budget` refusing widths off the budget's multiples even when the parameters match."""

from __future__ import annotations

import pytest

from tlmsearch.configs.presets import preset
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import Budget
from tlmsearch.profiles.joint_budget import _layer_term, _snap_choices, holds_budget, weighted_widths

BUDGET = Budget(3, 4, multiple_of=1, max_width=8)  # usable widths 1..8 units


def test_a_shape_water_filled_onto_a_weighted_total_by_hand() -> None:
    # lambda (1 + 2 + 3) = 12: targets 2, 4, 6, whole already
    assert weighted_widths([1, 2, 3], [1, 1, 1], BUDGET, 12) == (2, 4, 6)
    # weights 1, 2, 1 and a flat shape: 4 x = 12, x = 3 everywhere
    assert weighted_widths([1, 1, 1], [1, 2, 1], BUDGET, 12) == (3, 3, 3)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3, 1e6])
def test_the_shape_counts_not_its_scale(scale: float) -> None:
    assert weighted_widths([scale, 2 * scale, 3 * scale], [1, 1, 1], BUDGET, 12) == (2, 4, 6)


def test_a_zero_relative_width_stays_at_the_narrowest() -> None:
    # layer 0 at 1 unit; 2 x + x = 11 gives targets 11/3 for the others; among the sums
    # 2 k1 + k2 = 11, (4, 3) costs 2 (1/3)^2 + (2/3)^2 = 2/3, (3, 5) costs 8/3; k0 = 2 costs >= 1
    assert weighted_widths([0, 1, 1], [1, 2, 1], BUDGET, 12) == (1, 4, 3)


def test_a_total_the_widths_cannot_make_is_none() -> None:
    assert weighted_widths([1, 1, 1], [2, 2, 2], BUDGET, 13) is None  # every sum is even
    assert weighted_widths([1, 1, 1], [1, 1, 1], BUDGET, 2) is None  # below 3 x 1
    assert weighted_widths([1, 1, 1], [1, 1, 1], BUDGET, 25) is None  # above 3 x 8


def test_a_shape_of_the_wrong_length_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^profile has 2 widths and 3 block widths; the budget has n_layers=3$"):
        weighted_widths([1, 1], [1, 1, 1], BUDGET, 6)


@pytest.mark.parametrize(
    ("target", "radius", "choices"),
    [
        (0.2, 2, [(1, 0.8), (2, 1.8), (3, 2.8)]),  # at least one head; the window starts at 1
        (2.0, 1, [(2, 0.0), (1, 1.0), (3, 1.0)]),  # ties: fewer heads first
        (2.5, 1, [(2, 0.5), (3, 0.5), (4, 1.5)]),  # 2.5 rounds half up to 3: the window is 2..4
        (3.4, 0, [(3, 0.4)]),
    ],
)
def test_a_head_target_snaps_to_whole_heads_nearest_first(
    target: float, radius: int, choices: list[tuple[int, float]]
) -> None:
    got = _snap_choices(target, radius)
    assert [a for a, _ in got] == [a for a, _ in choices]
    assert [d for _, d in got] == pytest.approx([d for _, d in choices])


def test_widths_off_the_budgets_multiples_do_not_hold_it_even_with_the_same_parameters() -> None:
    p = preset("tiny")  # 2 layers of 64 MLP units in multiples of 8
    budget, uniform = p.budget(), p.model_config("transformer")
    assert holds_budget(uniform, budget)
    assert holds_budget(uniform.replace(mlp_widths=(72, 56)), budget)
    assert not holds_budget(uniform.replace(mlp_widths=(65, 63)), budget)  # same parameters, not multiples of 8
    assert not holds_budget(uniform.replace(mlp_widths=(72, 64)), budget)  # multiples, 8 units over
    narrowest16 = Budget(2, 64, multiple_of=8, min_width=16)
    assert holds_budget(uniform.replace(mlp_widths=(112, 16)), narrowest16)
    assert not holds_budget(uniform.replace(mlp_widths=(120, 8)), narrowest16)  # same parameters, below 16


@pytest.mark.parametrize("heads", [1, 2, 3, 5])
def test_a_layers_term_by_hand(heads: int) -> None:
    # the tiny Transformer (d 32, heads of 16): a layer without its MLP holds q, k, v and o
    # (4 x d x 16 heads) and two RMSNorm gains of d; with a block as wide as its heads (w = 16 heads),
    # q, k, v, o of w x w and two gains of w
    uniform = preset("tiny").model_config("transformer")
    d, w = 32, 16 * heads
    assert _layer_term(uniform, 0, heads, False) == 4 * d * w + 2 * d
    assert _layer_term(uniform, 1, heads, True) == 4 * w * w + 2 * w
