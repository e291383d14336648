"""Degrees of freedom of each built-in search space at a given depth, pinned by hand from the
spaces' own parameters (search_spaces/): a 2-layer budget leaves one free width, so every MLP
space has one degree of freedom there."""

from __future__ import annotations

import pytest

from tlmsearch.profiles.dof import dof_text, free_widths, space_dof
from tlmsearch.profiles.spaces import builtin_spaces

# space -> dof at 1, 2, 3, 4, 5, 8 layers, worked out from each space's parameters (profiles/dof.py)
PINNED = {
    "cosine": [0, 1, 1, 1, 1, 1],  # the start (end = 2 - start)
    "families": [0, 1, 2, 3, 3, 3],  # sigmoid or bump: three parameters
    "taper": [0, 1, 2, 3, 4, 4],  # strength times a bump's centre, width and amplitude
    "knots": [0, 1, 2, 3, 4, 4],  # five knots, less the scale
    "monotone": [0, 1, 2, 3, 4, 4],  # four ratios between five knots
    "free": [0, 1, 2, 3, 4, 7],  # a logit a layer, less the scale
    "joint": [0, 2, 2, 2, 2, 2],  # MLP start and heads' start (or the bowtie's ratio and position)
    "joint_flops": [0, 2, 2, 2, 2, 2],
}
DEPTHS = [1, 2, 3, 4, 5, 8]


@pytest.mark.parametrize("space", sorted(PINNED))
def test_each_space_has_its_hand_counted_dof(space: str) -> None:
    assert [space_dof(space, n) for n in DEPTHS] == PINNED[space]


def test_every_builtin_space_is_counted() -> None:
    assert set(builtin_spaces()) == set(PINNED)


def test_free_widths_and_the_text() -> None:
    assert [free_widths(n) for n in (1, 2, 6)] == [0, 1, 5]
    assert dof_text("knots", 2) == "2 layers: 1 free MLP width, the knots space 1 degree of freedom"
    assert dof_text("knots", 6) == "6 layers: 5 free MLP widths, the knots space 4 degrees of freedom"
    assert dof_text(None, 4) == "4 layers: 3 free MLP widths"
    assert space_dof("my_space.py", 4) is None and dof_text("my_space.py", 4) == "4 layers: 3 free MLP widths"
    with pytest.raises(ValueError):
        free_widths(0)


def test_a_joint_space_has_two_degrees_of_freedom_at_any_depth_past_one_layer() -> None:
    # its MLP and attention axes (one each), not more however many widths are free
    assert [space_dof("joint", n) for n in (1, 2, 3, 8, 16)] == [0, 2, 2, 2, 2]
