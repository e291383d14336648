"""The joint profile family: MLP width, attention heads and block width over depth, one text.

    joint:mlp,start=1.5,end=0.5                     TLM's cosine: the MLP width moves only
    joint:attention,heads_start=1.5,heads_end=0.5   query heads taper too (MLP shape: start/end)
    joint:block,ratio=0.3,position=0.75             ><former / Variable-Width Transformer bowtie
    joint:block,ratio=0.3,position=0.75,hold=flops  the same, training FLOPs per token held instead

`mode` says which axes move, and each axis has a low-dimensional shape:

- MLP: a cosine from `start` to `end` (as the `cosine` family; 1, 1 is uniform), every mode;
- attention (mode "attention"): query heads H_l = n_heads x a cosine from `heads_start` to
  `heads_end`, in whole heads of the preset's fixed size D = d_model / n_heads;
- block (mode "block"): the residual width w_l of the whole block (attention and MLP) follows a
  bowtie whose targets are the embedding width d_model at the first and last layer narrowing to
  `ratio` x d_model at relative depth `position` (half-cosine easings, as the `bowtie` family), in
  whole heads of size D; each block's heads follow its width (w_l / D) and its MLP shape is the
  cosine times its width, so a narrow block has a proportionally narrow MLP. The targets are
  snapped to whole heads the budget can balance exactly (`joint_budget.resolve_joint`): each block,
  the first and last included, may move up to SNAP_RADIUS (2) heads from its rounded target, up
  or down, so a block may end up narrower at the ends or wider than d_model (e.g. d_model 64 in 16-
  wide heads: [64, 48, 48, 64, 64, 96]); the nearest balanceable widths are taken. Holding the
  ends at d_model and every block at most d_model leaves some budgets nothing to balance but
  the uniform widths (cpu-s, the Transformer: every such bowtie would resolve to uniform).

What the budget holds equal to its uniform model (`hold`): its non-embedding parameters
("params", the default) or its training FLOPs per token ("flops"; `joint_budget.joint_config`).
The MLP-only mode holds both at once (every MLP unit of a d-wide block costs the same parameters
and FLOPs), so `hold` changes only the architectures that move heads or block widths: attention
FLOPs grow with the sequence length and its parameters do not, so a head taper balanced in FLOPs
spends other MLP widths (and holds other parameters) than one balanced in parameters.

An axis that does not move in the mode must stay neutral (heads_start = heads_end = 1 outside
"attention", ratio = 1 outside "block"), so one text says one architecture; the check refuses
the others in one line. This module is pure shape math on the profile's side: relative MLP
widths (the family's `fn`, what `ProfileSpec.widths(budget)` projects: exact for mode "mlp",
the MLP shape before the other axes take their share otherwise), and the real-valued head and
block targets (`head_targets`, `block_targets`). Snapping the targets to whole heads a budget
can balance, and solving the MLP widths so that the model holds exactly the uniform model's
non-embedding parameters, is `tlmsearch.profiles.joint_budget.resolve_joint`, which
`tlmsearch.configs.resolve.resolve_model` calls for a joint profile that moves more than the MLP.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tlmsearch.errors import ConfigError
from tlmsearch.profiles.interp import depths, mix

FAMILY = "joint"
MODES: tuple[str, ...] = ("mlp", "attention", "block")
HOLDS: tuple[str, ...] = ("params", "flops")  # as `tlmsearch.profiles.joint_budget.HOLDS`
DEFAULTS: dict[str, float | str] = {
    "mode": "mlp",
    "hold": "params",
    "start": 1.0,
    "end": 1.0,
    "heads_start": 1.0,
    "heads_end": 1.0,
    "ratio": 1.0,
    "position": 0.75,
}
MAX_HEADS_FACTOR = 4.0  # heads_start/heads_end at most 4x the preset's heads


def _cosine(n: int, s: float, e: float) -> list[float]:
    return [mix(s, e, (1 - math.cos(math.pi * x)) / 2) for x in depths(n)]


def _bowtie(n: int, ratio: float, position: float) -> list[float]:
    out = []
    for x in depths(n):
        u = x / position if x <= position else (1.0 - x) / (1.0 - position)  # 1 at the bottleneck
        out.append(1.0 - (1.0 - ratio) * (1.0 - math.cos(math.pi * u)) / 2.0)
    return out


def block_factors(n: int, p: Mapping[str, Any]) -> list[float]:
    """Block width over d_model per layer: the bowtie in mode "block", 1 elsewhere."""
    return _bowtie(n, p["ratio"], p["position"]) if p["mode"] == "block" else [1.0] * n


def mlp_shape(n: int, p: Mapping[str, Any]) -> list[float]:
    """Relative MLP widths: the cosine start -> end, times the block width in mode "block"."""
    return [c * b for c, b in zip(_cosine(n, p["start"], p["end"]), block_factors(n, p), strict=True)]


def head_targets(n: int, p: Mapping[str, Any], n_heads: int) -> list[float]:
    """Real-valued query heads per layer before snapping: n_heads x the heads cosine in mode
    "attention", the block's own heads (its width / D) in mode "block", n_heads in mode "mlp"."""
    if p["mode"] == "attention":
        return [n_heads * f for f in _cosine(n, p["heads_start"], p["heads_end"])]
    return [n_heads * f for f in block_factors(n, p)]


def block_targets(n: int, p: Mapping[str, Any], n_heads: int) -> list[float]:
    """Real-valued block widths per layer in heads of size D (n_heads = d_model) before snapping."""
    return [n_heads * f for f in block_factors(n, p)]


def moves_more_than_mlp(p: Mapping[str, Any]) -> bool:
    """Whether a resolved joint profile changes heads or block widths (else: a plain MLP profile)."""
    return p["mode"] != "mlp"


def check(p: Mapping[str, Any]) -> None:
    """Ranges, and neutral values on the axes the mode keeps fixed (one text, one architecture)."""
    for key in ("heads_start", "heads_end"):
        if not 0.0 < p[key] <= MAX_HEADS_FACTOR:
            raise ConfigError(
                f"joint: {key}={p[key]} must lie in (0, {MAX_HEADS_FACTOR:g}] (query heads / the preset's n_heads)"
            )
    if not 0.0 < p["ratio"] <= 1.0:
        raise ConfigError(f"joint: ratio={p['ratio']} must lie in (0, 1] (bottleneck block width / d_model)")
    if not 0.0 < p["position"] < 1.0:
        raise ConfigError(f"joint: position={p['position']} must lie in (0, 1) (relative depth of the bottleneck)")
    mode = p["mode"]
    if mode != "attention" and (p["heads_start"] != 1.0 or p["heads_end"] != 1.0):
        raise ConfigError(
            f"joint: heads_start/heads_end move the query heads, which mode={mode} keeps fixed; "
            "use mode=attention or leave them at 1"
        )
    if mode != "block" and p["ratio"] != 1.0:
        raise ConfigError(
            f"joint: ratio={p['ratio']} moves the block width, which mode={mode} keeps fixed; "
            "use mode=block or leave ratio at 1"
        )
