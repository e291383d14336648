"""Members of different width profiles made the same shape: every SwiGLU of every member padded
to the widest member's hidden size at that place, the extra units zero, with masks saying
which units are real.

A padded unit j has zero rows in W_gate and W_up and a zero column in W_down, so its hidden
value is silu(0) * 0 = 0 and it adds nothing to the output; the gradient of each of its
weights is a product with a zero factor, so it is exactly zero too (`tests/unit/pack/`
checks both), and the engine multiplies the gradients by the masks all the same, so that
AdamW (zero moments, zero weight, decoupled decay of zero) keeps them at zero for good. The
member's own units keep its own values: a padded member computes its own function, up to the
summation order of the matmuls.

Hope-attention splits a layer's width over its CMS levels; each level's SwiGLU is padded on
its own (to the widest member's width of that level), so any two profiles of one budget pack.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from tlmsearch.models.common import SwiGLU

# the hidden units of a SwiGLU's matrices: (parameter, dimension of the hidden units)
_HIDDEN_DIM = {"w_gate.weight": 0, "w_up.weight": 0, "w_down.weight": 1}


def mlp_paths(model: nn.Module) -> dict[str, int]:
    """{module path of each SwiGLU in `model`: its hidden units}, in module order."""
    return {name: m.hidden for name, m in model.named_modules() if isinstance(m, SwiGLU)}


def pad_members(models: Sequence[nn.Module]) -> tuple[dict[str, int], dict[str, torch.Tensor]]:
    """Pad every SwiGLU of `models` in place to the widest hidden size at its place.

    Returns the padded widths {path: units} and the masks {parameter name: (M, *shape) tensor
    of ones on each member's own units and zeros on its padding}, for the parameters some
    member pads (a parameter no member pads has no mask).
    """
    paths = [mlp_paths(m) for m in models]
    if any(list(p) != list(paths[0]) for p in paths):
        raise ValueError("members of a pack must have the same modules (one architecture and shape)")
    widths = {path: max(p[path] for p in paths) for path in paths[0]}
    masks: dict[str, torch.Tensor] = {}
    for path, wide in widths.items():
        own = [p[path] for p in paths]
        if all(w == wide for w in own):
            continue
        for model in models:
            _pad_swiglu(model, path, wide)
        for local, dim in _HIDDEN_DIM.items():
            shape = models[0].get_parameter(f"{path}.{local}").shape
            mask = torch.zeros(len(models), *shape, dtype=models[0].get_parameter(f"{path}.{local}").dtype)
            for i, w in enumerate(own):
                mask[i].narrow(dim, 0, w).fill_(1)
            masks[f"{path}.{local}"] = mask
    return widths, masks


def _pad_swiglu(model: nn.Module, path: str, wide: int) -> None:
    old = model.get_submodule(path)
    assert isinstance(old, SwiGLU)
    if old.hidden == wide:
        return
    parent, _, leaf = path.rpartition(".")
    dim = old.w_gate.in_features
    with torch.device("meta"):  # no init, no draw from the global RNG
        new = SwiGLU(dim, wide)
    for local, hidden_dim in _HIDDEN_DIM.items():
        module_name = local.split(".")[0]
        own = getattr(old, module_name).weight
        weight = own.detach()
        pad = [0, 0, 0, 0]
        pad[3 - 2 * hidden_dim] = wide - old.hidden  # F.pad lists the last dimension first
        padded = torch.nn.functional.pad(weight, pad)  # zeros after the member's own units
        getattr(new, module_name).weight = nn.Parameter(padded, requires_grad=own.requires_grad)
    setattr(model.get_submodule(parent) if parent else model, leaf, new)


def unpad(state: dict[str, torch.Tensor], own: dict[str, int]) -> dict[str, torch.Tensor]:
    """`state` (one member's padded tensors) cut back to the member's own widths `own`
    ({SwiGLU path: hidden units}, from `mlp_paths` of its unpadded model)."""
    out = dict(state)
    for path, w in own.items():
        for local, dim in _HIDDEN_DIM.items():
            name = f"{path}.{local}"
            if name in out:
                out[name] = out[name].narrow(dim, 0, w)
    return out
