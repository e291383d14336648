"""`build_model` and `mlp_hidden_sizes` (import torch; re-exported lazily by the package)."""

from __future__ import annotations

import torch
from torch import nn

from tlmsearch.config import ModelConfig
from tlmsearch.models.registry import architecture, import_object


def model_class(arch: str) -> type[nn.Module]:
    """The `nn.Module` class of architecture `arch` (imports its module)."""
    cls = import_object(architecture(arch).model)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise TypeError(f"{architecture(arch).model} is not an nn.Module class")
    return cls


def build_model(cfg: ModelConfig, *, seed: int | None = None) -> nn.Module:
    """Build the model `cfg` describes (on CPU, float32). With `seed`, initialise under
    `torch.manual_seed(seed)` without disturbing the global RNG state afterwards."""
    cls = model_class(cfg.arch)
    if seed is None:
        return cls(cfg)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return cls(cfg)


def mlp_hidden_sizes(model: nn.Module) -> tuple[int, ...]:
    """Each block's tapered MLP hidden units, read off the built modules (Hope-attention:
    the sum over its CMS levels)."""
    sizes = []
    for block in model.blocks:  # type: ignore[union-attr]
        mlps = [level.mlp for level in block.levels] if hasattr(block, "levels") else [block.mlp]
        sizes.append(sum(mlp.w_gate.out_features for mlp in mlps))
    return tuple(sizes)
