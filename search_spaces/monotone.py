"""Monotone tapers of any shape: K = 5 knots, each at most as wide as the one before.

The first knot is 1 (profiles are scale-free: the budget fixes the total); each next knot is
the previous one times a ratio in [0.25, 1], and a monotone cubic joins them, so every sample
narrows (or stays level) with depth.
"""

from __future__ import annotations

from typing import Any

from search_spaces._common import linear_knots
from tlmsearch.profiles import ProfileSpec

NAME = "monotone"
DESCRIPTION = "non-increasing profiles: 5 monotone-cubic knots set by 4 ratios in [0.25, 1]"
K = 5


def sample(trial: Any, n_layers: int) -> ProfileSpec:
    values = [1.0]
    for i in range(1, K):
        values.append(values[-1] * trial.suggest_float(f"r{i}", 0.25, 1.0))
    params: dict[str, float | str] = {f"k{i}": v for i, v in enumerate(values)}
    params.update(mode="decreasing", interp="pchip")
    return ProfileSpec(family="knots", params=params)


def dimension(n_layers: int) -> int:
    return K - 1


def encode(spec: ProfileSpec, n_layers: int) -> dict[str, Any] | None:
    values = linear_knots(spec, K)
    if values is None:
        return None
    ratios = [b / a for a, b in zip(values, values[1:], strict=False)]
    if not all(0.25 <= r <= 1.0 for r in ratios):
        return None
    return {f"r{i + 1}": r for i, r in enumerate(ratios)}
