"""Cosine tapers only: one parameter, the start ratio (end = 2 - start, so the mean is 1).

start > 1 narrows with depth (the paper's 1.5 -> 0.5), start < 1 widens (expanding), 1 is uniform.
"""

from __future__ import annotations

from typing import Any

from search_spaces._common import START_RANGE, normalized_start
from tlmsearch.profiles import ProfileSpec

NAME = "cosine"
DESCRIPTION = "cosine schedules start -> 2 - start (1-D): how strong should the taper be?"


def sample(trial: Any, n_layers: int) -> ProfileSpec:
    start = trial.suggest_float("start", *START_RANGE)
    return ProfileSpec(family="cosine", params={"start": start, "end": 2.0 - start})


def dimension(n_layers: int) -> int:
    return 1


def encode(spec: ProfileSpec, n_layers: int) -> dict[str, Any] | None:
    if spec.family not in ("cosine", "uniform"):
        return None
    start = normalized_start(spec)
    return None if start is None else {"start": start}
