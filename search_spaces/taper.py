"""Taper family x strength, with an optional non-monotone deviation: built to be the default space.

The question a search answers is whether the paper's cosine taper (1.5x -> 0.5x) is near the
best way to spread MLP width over depth, so the space is built around that answer and its
rivals: a categorical `taper` (cosine, linear, or the paper's controlled `groups` experiment),
its strength (`start` in [0.2, 1.8] with end = 2 - start: 1.5 is the paper's taper, 1 is
uniform, 0.5 the expanding mirror), and an optional `deviation` (a Gaussian bump or dip
multiplied onto the taper) that makes middle-heavy, hourglass and bent shapes. Every default
baseline (uniform, cosine and linear 1.5 -> 0.5, cosine 0.5 -> 1.5), the groups profiles and
plain bump/hourglass profiles are points of the space, encoded exactly, so they enter the study
and the sampler learns from them. About half the prior mass goes to monotone profiles (split
evenly between narrowing and widening) and half to non-monotone ones: see
`tlmsearch profiles --spaces` for the measured fractions.
"""

from __future__ import annotations

import math
from typing import Any

from search_spaces._common import START_RANGE, normalized_start
from tlmsearch.profiles import ProfileSpec, relative_widths, resolve_params

NAME = "taper"
DESCRIPTION = "taper (cosine, linear, groups) x strength, optionally times a bump or dip"
TAPERS = ("cosine", "linear", "groups")
THIRDS = ("early", "middle", "late")
DEVIATIONS = ("none", "bump")
GROUPS_FACTOR = (1.0, 3.0)
BUMP_CENTRE = (0.0, 1.0)
BUMP_WIDTH = (0.1, 0.5)
BUMP_AMPLITUDE = (-0.75, 0.75)


def sample(trial: Any, n_layers: int) -> ProfileSpec:
    taper = trial.suggest_categorical("taper", TAPERS)
    if taper == "groups":
        third = trial.suggest_categorical("groups_third", THIRDS)
        base = ProfileSpec(
            family="groups", params={"third": third, "factor": trial.suggest_float("groups_factor", *GROUPS_FACTOR)}
        )
    else:
        start = trial.suggest_float("start", *START_RANGE)
        base = ProfileSpec(family=taper, params={"start": start, "end": 2.0 - start})
    if trial.suggest_categorical("deviation", DEVIATIONS) == "none":
        return base
    bump: dict[str, float | str] = {
        "centre": trial.suggest_float("bump_centre", *BUMP_CENTRE),
        "width": trial.suggest_float("bump_width", *BUMP_WIDTH),
        "amplitude": trial.suggest_float("bump_amplitude", *BUMP_AMPLITUDE),
    }
    return compose(base, bump, n_layers)


def compose(base: ProfileSpec, bump: dict[str, float | str], n_layers: int) -> ProfileSpec:
    """`base` times the bump `1 + amplitude * Gaussian(centre, width)`, layer by layer.

    On a flat base the product is the `bump` family itself (so bump and hourglass profiles
    are reproduced exactly); otherwise the product is written as one `free` logit per layer.
    """
    rel = relative_widths(base.family, n_layers, **base.params)
    if len(set(rel)) == 1:
        return ProfileSpec(family="bump", params=dict(bump))
    dev = relative_widths("bump", n_layers, **bump)
    logs = [math.log(a * b) for a, b in zip(rel, dev, strict=True)]
    mean = sum(logs) / n_layers
    return ProfileSpec(family="free", params={f"l{i}": v - mean for i, v in enumerate(logs)})


def dimension(n_layers: int) -> int:
    return 1 + 2 + 1 + 3  # taper, its (at most two) parameters, deviation, three bump parameters


def encode(spec: ProfileSpec, n_layers: int) -> dict[str, Any] | None:
    """The point that reproduces `spec`: uniform, cosine, linear (any start/end whose normalised
    start lies in [0.2, 1.8]), groups with factor in [1, 3], and bump profiles within the
    bump ranges; None for anything else."""
    plain = {"deviation": "none"}
    if spec.family in ("uniform", "cosine", "linear"):
        start = normalized_start(spec)
        if start is None:
            return None
        taper = "cosine" if spec.family == "uniform" else spec.family
        return {"taper": taper, "start": start, **plain}
    p = resolve_params(spec.family, spec.params)
    if spec.family == "groups":
        factor = float(p["factor"])
        if not GROUPS_FACTOR[0] <= factor <= GROUPS_FACTOR[1]:
            return None
        return {"taper": "groups", "groups_third": p["third"], "groups_factor": factor, **plain}
    if spec.family == "bump":
        point = {f"bump_{k}": float(p[k]) for k in ("centre", "width", "amplitude")}
        ranges = {"bump_centre": BUMP_CENTRE, "bump_width": BUMP_WIDTH, "bump_amplitude": BUMP_AMPLITUDE}
        if not all(lo <= point[k] <= hi for k, (lo, hi) in ranges.items()):
            return None
        return {"taper": "cosine", "start": 1.0, "deviation": "bump", **point}
    return None
