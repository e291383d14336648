"""The registry of families and `build_model` (imports torch; re-exported by the package)."""

from __future__ import annotations

import torch
from torch import nn

from tlmsearch.config import ModelConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models.gated_attention import GatedAttentionLM
from tlmsearch.models.hope_attention import HopeAttention
from tlmsearch.models.titans import Titans
from tlmsearch.models.transformer import Transformer

ARCHITECTURES: dict[str, type[nn.Module]] = {
    "transformer": Transformer,
    "gated_attention": GatedAttentionLM,
    "titans": Titans,
    "hope_attention": HopeAttention,
}


def build_model(cfg: ModelConfig, *, seed: int | None = None) -> nn.Module:
    """Build the model `cfg` describes (on CPU, float32). With `seed`, initialise under
    `torch.manual_seed(seed)` without disturbing the global RNG state afterwards."""
    cls = ARCHITECTURES.get(cfg.arch)
    if cls is None:
        raise ConfigError(f"arch={cfg.arch!r} is not allowed; choose one of: {', '.join(ARCHITECTURES)}")
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
