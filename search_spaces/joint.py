"""Joint architectures: MLP width only, MLP and attention heads, or the whole block width.

The prior is balanced over the three modes (an Optuna categorical `mode`, each mode 1/3 of a
random search's trials), then the chosen mode's own low-dimensional parameters (conditional,
define-by-run), all with means kept at 1 so the tapers trade width between layers rather than
ask for more attention than the budget holds:

- mlp:       `start` in START_RANGE, the MLP cosine start -> 2 - start (1: uniform; 1.5: TLM's taper);
- attention: `start` as above and `heads_start` in HEADS_RANGE, query heads n_heads x a cosine
             heads_start -> 2 - heads_start;
- block:     `ratio` in RATIO_RANGE and `position` in POSITION_RANGE, the bowtie of the whole
             block width (the ><former point is ratio 0.3, position 0.75), MLP proportional to it.

For a family that builds one residual width in every layer (Titans, Hope-attention:
`ArchSpec.block_widths` false) the search tells `sample` its `arch`, and the mode is drawn from
"mlp" and "attention" only, half each: every trial is one the family can build.

So uniform, TLM's cosine 1.5 -> 0.5 and the bowtie are points of the space (`encode`). A
sampled profile's heads are snapped to whole heads the budget balances
(`tlmsearch.profiles.joint_budget.resolve_joint`: deterministic, nearest first); one the budget
cannot balance at all fails its trial with the resolver's one-line reason, and the search goes
on. At presets tiny and cpu-xs no sample of these ranges is refused (tests/unit/profiles/test_joint.py).
"""

from __future__ import annotations

from typing import Any

from search_spaces._common import START_RANGE
from tlmsearch.core.architectures import architecture
from tlmsearch.profiles import ProfileSpec, resolve_params

NAME = "joint"
DESCRIPTION = "joint architectures (1-2-D per mode): MLP taper, + attention-head taper, or block-width bowtie"
MODES = ("mlp", "attention", "block")
HEADS_RANGE = (0.2, 1.8)  # heads_start; heads_end = 2 - heads_start
RATIO_RANGE = (0.2, 1.0)  # bottleneck block width / d_model
POSITION_RANGE = (0.1, 0.9)  # relative depth of the bottleneck


def modes(arch: str | None) -> tuple[str, ...]:
    """The modes the space draws for family `arch`: all three, or without "block" for a family
    that does not build per-layer block widths (None: no family at hand, all three)."""
    if arch is None or architecture(arch).block_widths:
        return MODES
    return tuple(m for m in MODES if m != "block")


def sample(trial: Any, n_layers: int, arch: str | None = None) -> ProfileSpec:
    mode = trial.suggest_categorical("mode", modes(arch))
    if mode == "block":
        ratio = trial.suggest_float("ratio", *RATIO_RANGE)
        position = trial.suggest_float("position", *POSITION_RANGE)
        return ProfileSpec(family="joint", params={"mode": mode, "ratio": ratio, "position": position})
    start = trial.suggest_float("start", *START_RANGE)
    params: dict[str, float | str] = {"mode": mode, "start": start, "end": 2.0 - start}
    if mode == "attention":
        heads = trial.suggest_float("heads_start", *HEADS_RANGE)
        params.update(heads_start=heads, heads_end=2.0 - heads)
    return ProfileSpec(family="joint", params=params)


def dimension(n_layers: int) -> int:
    return 3  # the mode and at most two parameters of it


def encode(spec: ProfileSpec, n_layers: int) -> dict[str, Any] | None:
    """The point of the space that trains the same model as `spec` (uniform, cosine, and the
    joint profiles whose tapers keep a mean of 1), or None."""
    if spec.family == "uniform":
        return {"mode": "mlp", "start": 1.0}
    if spec.family not in ("cosine", "joint"):
        return None
    p = resolve_params(spec.family, spec.params)
    mode = str(p.get("mode", "mlp"))
    if mode != "mlp" and p.get("hold", "params") != "params":
        return None  # held at equal FLOPs: another model (the joint_flops space's)
    if mode == "block":
        point = {"mode": mode, "ratio": p["ratio"], "position": p["position"]}
        inside = p["start"] == p["end"] and _within(p["ratio"], RATIO_RANGE) and _within(p["position"], POSITION_RANGE)
        return point if inside else None
    s, e = float(p["start"]), float(p["end"])
    start = 2 * s / (s + e)  # the MLP's scale is the budget's: only the ratio matters
    if not _within(start, START_RANGE):
        return None
    if mode == "mlp":
        return {"mode": mode, "start": start}
    heads = float(p["heads_start"])
    if heads + float(p["heads_end"]) != 2.0 or not _within(heads, HEADS_RANGE):
        return None  # heads are absolute (n_heads x the taper): only a mean of 1 is in the space
    return {"mode": mode, "start": start, "heads_start": heads}


def _within(value: Any, bounds: tuple[float, float]) -> bool:
    return bounds[0] <= float(value) <= bounds[1]
