"""Transformer (Llama-style "Transformer++", the baseline of Titans and Nested Learning).

    h = h + W_o · Attn(RoPE(x W_q), RoPE(x W_k), x W_v)      x = RMSNorm(h)
    h = h + SwiGLU_l(RMSNorm(h))                              hidden f_l = mlp_widths[l]

Pre-norm, no biases, RoPE theta from the config. [OURS] q, k, v come from one fused linear
(d -> 3d), which has the same parameters as three separate ones. Layer l may have its own
query heads H_l and key/value heads G_l (`ModelConfig.attn_heads`, `kv_heads`; head size fixed,
G_l dividing H_l as in grouped-query attention): then the fused linear is d -> (H_l + 2 G_l) D
and W_o is H_l D -> d (`common.Attention`).
"""

from __future__ import annotations

import torch
from torch import nn

from tlmsearch.config import ModelConfig
from tlmsearch.models.common import Attention, LanguageModel, RMSNorm, Rope, SwiGLU


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer_idx: int) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = Attention(cfg, layer_idx)
        self.mlp_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.mlp = SwiGLU(cfg.d_model, cfg.mlp_widths[layer_idx])

    def forward(self, h: torch.Tensor, rope: Rope) -> torch.Tensor:
        h = h + self.attn(self.attn_norm(h), rope)  # (B, T, C)
        return h + self.mlp(self.mlp_norm(h))  # (B, T, C)


class Transformer(LanguageModel):
    block_cls = Block
