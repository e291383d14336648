"""Width-aware parametrisation (`TrainConfig.parametrization = "width"`): muP-style per-layer
init and Adam learning-rate scaling by each layer's MLP width.

Why: under the standard parametrisation every MLP matrix is drawn with the same std and trained
with the same learning rate whatever its layer's width. A tapered profile (cosine 1.5 -> 0.5)
then runs its wide first layers with a larger effective step than its narrow last ones: a
down-projection of fan-in f sums f hidden units, so its output at init grows as sqrt(f), and an
Adam step (whose entries are all about lr in size, and correlated with the input) moves it by
about lr * f. Width then confounds the comparison with a learning-rate change per layer; the
Variable-Width Transformers (arXiv 2606.18246) train per-layer widths under muP for that reason.

The rule (Tensor Programs V, Yang et al. 2022, arXiv 2203.03466, Table 3; CompleteP, arXiv
2505.01618, keeps the same width rules). Only the MLP width varies between the profiles of a
budget (d_model, heads, vocabulary are fixed), so only the weights whose fan-in is that width
change, and each layer's multiplier is m_l = base_width / width_l:

- the down-projection W_down of layer l (fan_in = width_l, fan_out = d_model): its fan-in grows
  with width. muP gives every weight whose fan-in grows init Var ~ 1/fan_in (hidden weights)
  and an Adam learning rate ~ 1/fan_in (hidden and output weights alike), so here:
      init std  = (the standard std: init_std / sqrt(2 n_layers)) * sqrt(m_l)
      Adam lr   = (the schedule's lr) * m_l
  (muP's output-weight init Var ~ 1/fan_in^2 is for the logits, which must vanish at init; a
  residual branch keeps its O(1) contribution, as in the Variable-Width Transformers.)
- W_gate and W_up (fan_in = d_model, fan_out = width_l): their fan-in is fixed, so they are
  muP's input weights: init Var ~ 1/fan_in and Adam lr ~ 1, both unchanged.
- everything else (embedding / tied head, attention, norms, memory modules) does not depend on
  the MLP width and is unchanged.

base_width = the mean of `mlp_widths` (the budget's uniform width: equal to the base width under
an exact budget), so the uniform profile has m_l = 1 everywhere and trains bit for bit as under
"standard". Hope-attention splits a layer's width over its CMS levels in fixed shares; each
level's W_down has fan-in share * width_l and base share * base_width, so it takes the layer's
m_l (up to the rounding of the shares). Its fast levels' test-time step sizes are learned
parameters and are left as they are.

Weight decay: torch's AdamW decays by lr * weight_decay, so a scaled learning rate scales the
decay of W_down by m_l too (as muP's MuAdamW does).

`build_model(..., parametrization="width")` scales the init and records m_l per parameter on the
model (`LR_SCALES_ATTR`); `trainer.make_optimizer` puts each scaled matrix in a parameter group
carrying `lr_scale = m_l`, and the trainer sets that group's lr to the schedule's value times it.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from tlmsearch.core.base import PARAMETRIZATIONS
from tlmsearch.errors import ConfigError

LR_SCALES_ATTR = "lr_scales"  # on a model built "width": {parameter name: Adam lr multiplier}


def check_parametrization(name: str) -> None:
    if name not in PARAMETRIZATIONS:
        raise ConfigError(f"parametrization={name!r} is not allowed; choose one of: {', '.join(PARAMETRIZATIONS)}")


def _mlps(block: Any) -> list[Any]:
    """The tapered MLPs of one block: its `mlp`, or (Hope-attention) each CMS level's."""
    if hasattr(block, "levels"):
        return [level.mlp for level in block.levels]
    return [block.mlp]


def width_multipliers(model: nn.Module, base_width: float | None = None) -> dict[str, float]:
    """{name of each layer's MLP down-projection weight: base_width / width_l} for `model` (a
    `LanguageModel`); `base_width` defaults to the mean of `model.cfg.mlp_widths`."""
    if not all(hasattr(model, a) for a in ("cfg", "blocks")):
        raise ConfigError(
            f"parametrization='width' needs a model with blocks and a config of mlp_widths; "
            f"{type(model).__name__} has none: use parametrization='standard'"
        )
    lm: Any = model  # a LanguageModel: its config and its blocks
    widths: tuple[int, ...] = lm.cfg.mlp_widths
    base = float(base_width) if base_width is not None else sum(widths) / len(widths)
    if not (math.isfinite(base) and base > 0):
        raise ConfigError(f"base_width={base_width!r} must be a finite number > 0")
    names = {id(p): n for n, p in model.named_parameters()}
    out: dict[str, float] = {}
    for layer, block in enumerate(lm.blocks):
        for mlp in _mlps(block):
            out[names[id(mlp.w_down.weight)]] = base / widths[layer]
    return out


@torch.no_grad()
def apply_parametrization(model: nn.Module, parametrization: str, base_width: float | None = None) -> dict[str, float]:
    """Apply `parametrization` to a freshly initialised `model` in place and record its Adam lr
    multipliers on it (`LR_SCALES_ATTR`); returns them. "standard" changes nothing (returns {}
    and records nothing).
    "width": every MLP down-projection weight is multiplied by sqrt(m_l) (its std becomes the
    standard one times sqrt(m_l), the same draw otherwise: common random numbers survive) and
    gets lr multiplier m_l; a multiplier of exactly 1 (a layer at the base width) is left out,
    so the uniform profile builds and trains exactly as under "standard"."""
    check_parametrization(parametrization)
    if parametrization == "standard":
        return {}
    scales: dict[str, float] = {}
    params = dict(model.named_parameters())
    for name, m in width_multipliers(model, base_width).items():
        if m != 1.0:
            params[name].mul_(math.sqrt(m))
            scales[name] = m
    setattr(model, LR_SCALES_ATTR, scales)
    return scales


def lr_scales(model: nn.Module) -> dict[str, float] | None:
    """The Adam lr multipliers `apply_parametrization` recorded on `model`: None for a model
    built "standard" (nothing recorded), else {name: m_l} ({} for the uniform profile)."""
    scales = getattr(model, LR_SCALES_ATTR, None)
    return dict(scales) if isinstance(scales, dict) else None
