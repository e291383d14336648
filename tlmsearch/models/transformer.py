"""Transformer (Llama-style "Transformer++", the baseline of Titans and Nested Learning).

    h = h + W_o · Attn(RoPE(x W_q), RoPE(x W_k), x W_v)      x = RMSNorm(h)
    h = h + SwiGLU_l(RMSNorm(h))                              hidden f_l = mlp_widths[l]

Pre-norm, no biases, RoPE theta from the config. [OURS] q, k, v come from one fused linear
(d -> 3d), which has the same parameters as three separate ones.
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
        self.attn = Attention(cfg)
        self.mlp_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.mlp = SwiGLU(cfg.d_model, cfg.mlp_widths[layer_idx])

    def forward(self, h: torch.Tensor, rope: Rope) -> torch.Tensor:
        h = h + self.attn(self.attn_norm(h), rope)  # (B, T, C)
        return h + self.mlp(self.mlp_norm(h))  # (B, T, C)


class Transformer(LanguageModel):
    block_cls = Block
