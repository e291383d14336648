"""Pins of `ladders/points.py`: a point's size without a known shape (0 layers, head size 0, not a
division by zero), its being frozen, its compute (FLOPs per token x tokens, by hand), and the
target's tokens per parameter refused unless positive and finite."""

from __future__ import annotations

import dataclasses
import math

import pytest

from tlmsearch.errors import ConfigError
from tlmsearch.ladders.points import PointSize, target_of


def test_a_size_without_its_shape() -> None:
    size = PointSize(non_embedding=1000, params_total=1500, steps=10, tokens=20_000, flops_per_token=6000.0)
    assert (size.n_layers, size.d_model, size.n_heads, size.head_dim) == (0, 0, 0, 0)
    assert size.shape_text() == "0 layers, head size 0"
    assert size.compute == 1.2e8  # 6,000 FLOPs a token x 20,000 tokens
    # a width without its heads: no head size (not the width itself)
    assert dataclasses.replace(size, d_model=64).head_dim == 0
    shaped = dataclasses.replace(size, n_layers=8, d_model=64, n_heads=4)
    assert shaped.head_dim == 16 and shaped.shape_text() == "8 layers, head size 16"
    with pytest.raises(dataclasses.FrozenInstanceError):
        size.steps = 5  # type: ignore[misc]


@pytest.mark.parametrize("tpp", [0.0, -1.0, math.inf, math.nan])
def test_a_targets_tokens_per_parameter_must_be_positive_and_finite(tpp: float) -> None:
    with pytest.raises(ConfigError, match=f"target tokens per parameter {tpp} must be positive"):
        target_of("440m", "transformer", tpp)


def test_a_target_by_count() -> None:
    target = target_of("440m", "transformer", 20.0)
    assert target.params == 4.4e8 and target.tokens_per_param == 20.0
