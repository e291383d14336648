"""Any shape, monotone or not: K = 5 knot values in [0.25, 2] (log scale), monotone cubic between.

Covers tapering, expanding, middle-heavy and hourglass profiles with five numbers.
"""

from __future__ import annotations

from typing import Any

from search_spaces._common import linear_knots
from tlmsearch.profiles import ProfileSpec

NAME = "knots"
DESCRIPTION = "non-monotone profiles: 5 knot values in [0.25, 2] joined by a monotone cubic"
K = 5


def sample(trial: Any, n_layers: int) -> ProfileSpec:
    params: dict[str, float | str] = {f"k{i}": trial.suggest_float(f"k{i}", 0.25, 2.0, log=True) for i in range(K)}
    params.update(mode="free", interp="pchip")
    return ProfileSpec(family="knots", params=params)


def dimension(n_layers: int) -> int:
    return K


def encode(spec: ProfileSpec, n_layers: int) -> dict[str, Any] | None:
    values = linear_knots(spec, K)
    if values is None or not all(0.25 <= v <= 2.0 for v in values):
        return None
    return {f"k{i}": v for i, v in enumerate(values)}
