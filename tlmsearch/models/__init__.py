"""The four architecture families, a plain dict registry, and analytic counts.

    model = build_model(cfg)            # cfg: tlmsearch.ModelConfig
    logits = model(idx)                 # idx (B, T) long -> logits (B, T, vocab_size)

Every family is `embedding -> blocks -> RMSNorm -> LM head`; block l is built as
`Block(cfg, l)` and its MLP has hidden width `cfg.mlp_widths[l]` (Hope-attention: its CMS
levels' widths sum to it). `count_params(cfg)` and `flops_per_token(cfg)` are analytic and
need no model (they live in `tlmsearch.models.counts`, which imports no torch).
"""

from __future__ import annotations

import torch
from torch import nn

from tlmsearch.config import ARCHITECTURE_NAMES, ModelConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models.counts import ParamCounts, cms_level_widths, count_params, flops_per_token
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

__all__ = [
    "ARCHITECTURES",
    "ARCHITECTURE_NAMES",
    "ParamCounts",
    "build_model",
    "cms_level_widths",
    "count_params",
    "flops_per_token",
    "mlp_hidden_sizes",
]


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
