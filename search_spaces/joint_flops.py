"""Joint architectures at equal training FLOPs per token: the `joint` space with `hold=flops`.

The same balanced prior over "MLP only", "attention too" and "whole block" and the same ranges
as `search_spaces/joint.py`, but every sampled architecture spends exactly the uniform model's
training FLOPs per token (forward + backward, `tlmsearch.models.counts.flops_per_token`) instead
of its non-embedding parameters: the MLP widths are solved against FLOPs
(`tlmsearch.profiles.joint_budget.joint_config(..., hold="flops")`), so a head or block taper
changes the parameter count and never the compute. MLP-only points hold both at once, so
uniform and TLM's cosine are points of this space too. Hope-attention refuses it (its fast CMS
levels' FLOPs are not linear in the MLP widths): such a trial fails with that one-line reason.
Titans' attention FLOPs are not linear in its heads, so no head vector near a taper balances its
FLOPs but the uniform one: there an attention point resolves to uniform heads (the MLP taper
only), or, when uniform heads lie beyond the snap's reach, its trial fails with the resolver's
one-line reason (tests/unit/profiles/test_joint_flops.py shows both at presets tiny and cpu-xs).
"""

from __future__ import annotations

from typing import Any

from search_spaces import joint
from tlmsearch.profiles import ProfileSpec, resolve_params

NAME = "joint_flops"
DESCRIPTION = "the joint space with training FLOPs per token held equal (hold=flops) instead of parameters"
HOLD = "flops"


def sample(trial: Any, n_layers: int, arch: str | None = None) -> ProfileSpec:
    spec = joint.sample(trial, n_layers, arch)  # no whole-block mode for a family without block widths
    return ProfileSpec(family=spec.family, params={**spec.params, "hold": HOLD})


def dimension(n_layers: int) -> int:
    return joint.dimension(n_layers)


def encode(spec: ProfileSpec, n_layers: int) -> dict[str, Any] | None:
    """The point that trains the same model as `spec`: MLP-only profiles (held in both), and
    joint profiles that hold FLOPs; None for a joint profile that moves heads or blocks at equal
    parameters (another model here)."""
    if spec.family == "joint":
        p = resolve_params(spec.family, spec.params)
        if p["mode"] != "mlp" and p["hold"] != HOLD:
            return None
        spec = ProfileSpec(family=spec.family, params={k: v for k, v in spec.params.items() if k != "hold"})
    return joint.encode(spec, n_layers)
