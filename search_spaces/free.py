"""Fully free profiles: one logit per layer in [-1.5, 1.5]; widths follow their softmax.

The largest space (dimension = number of layers); the widest layer can be e^3 ~ 20 times the
narrowest. Every baseline within that ratio is expressible exactly (logit = log width).
"""

from __future__ import annotations

import math
from typing import Any

from tlmsearch.profiles import ProfileSpec, relative_widths

NAME = "free"
DESCRIPTION = "one logit per layer in [-1.5, 1.5], widths proportional to exp(logit)"
LOW, HIGH = -1.5, 1.5


def sample(trial: Any, n_layers: int) -> ProfileSpec:
    return ProfileSpec(
        family="free", params={f"l{i}": trial.suggest_float(f"l{i}", LOW, HIGH) for i in range(n_layers)}
    )


def dimension(n_layers: int) -> int:
    return n_layers


def encode(spec: ProfileSpec, n_layers: int) -> dict[str, Any] | None:
    rel = relative_widths(spec.family, n_layers, **spec.params)
    logs = [math.log(w) for w in rel]
    shift = (max(logs) + min(logs)) / 2
    logits = [v - shift for v in logs]
    if min(logits) < LOW or max(logits) > HIGH:
        return None
    return {f"l{i}": v for i, v in enumerate(logits)}
