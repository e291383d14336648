"""All parametric families at once: a categorical family with conditional parameters.

Parameters are named `<family>_<param>` so that each keeps one distribution across trials.
"""

from __future__ import annotations

from typing import Any

from search_spaces._common import START_RANGE, normalized_start
from tlmsearch.profiles import ProfileSpec, resolve_params

NAME = "families"
DESCRIPTION = "categorical family (uniform, cosine, linear, sigmoid, power, groups, bump) with its parameters"
FAMILIES = ("uniform", "cosine", "linear", "sigmoid", "power", "groups", "bump")


def sample(trial: Any, n_layers: int) -> ProfileSpec:
    family = trial.suggest_categorical("family", FAMILIES)
    if family == "uniform":
        return ProfileSpec(family="uniform")
    if family in ("cosine", "linear"):
        start = trial.suggest_float(f"{family}_start", *START_RANGE)
        return ProfileSpec(family=family, params={"start": start, "end": 2.0 - start})
    if family == "sigmoid":
        start = trial.suggest_float("sigmoid_start", *START_RANGE)
        params = {
            "start": start,
            "end": 2.0 - start,
            "steepness": trial.suggest_float("sigmoid_steepness", 2.0, 30.0, log=True),
            "midpoint": trial.suggest_float("sigmoid_midpoint", 0.2, 0.8),
        }
        return ProfileSpec(family="sigmoid", params=params)
    if family == "power":
        return ProfileSpec(family="power", params={"exponent": trial.suggest_float("power_exponent", -1.0, 1.0)})
    if family == "groups":
        third = trial.suggest_categorical("groups_third", ("early", "middle", "late"))
        factor = trial.suggest_float("groups_factor", 1.0, 3.0)
        return ProfileSpec(family="groups", params={"third": third, "factor": factor})
    centre = trial.suggest_float("bump_centre", 0.0, 1.0)
    width = trial.suggest_float("bump_width", 0.1, 0.5)
    amplitude = trial.suggest_float("bump_amplitude", -0.8, 2.0)
    return ProfileSpec(family="bump", params={"centre": centre, "width": width, "amplitude": amplitude})


def dimension(n_layers: int) -> int:
    return 1 + 4  # the family plus at most four conditional parameters (sigmoid has three)


def encode(spec: ProfileSpec, n_layers: int) -> dict[str, Any] | None:
    if spec.family == "uniform":
        return {"family": "uniform"}
    if spec.family in ("cosine", "linear"):
        start = normalized_start(spec)
        return None if start is None else {"family": spec.family, f"{spec.family}_start": start}
    if spec.family == "groups":
        p = resolve_params("groups", spec.params)
        if 1.0 <= float(p["factor"]) <= 3.0:
            return {"family": "groups", "groups_third": p["third"], "groups_factor": float(p["factor"])}
    return None
