"""Transformer (Llama-style "Transformer++", the baseline of Titans and Nested Learning).

    h = h + W_o · Attn(RoPE(x W_q), RoPE(x W_k), x W_v)      x = RMSNorm(h)
    h = h + SwiGLU_l(RMSNorm(h))                              hidden f_l = mlp_widths[l]

Pre-norm, no biases, RoPE theta from the config. [OURS] q, k, v come from one fused linear
(d -> 3d), which has the same parameters as three separate ones. Layer l may have its own
query heads H_l and key/value heads G_l (`ModelConfig.attn_heads`, `kv_heads`; head size fixed,
G_l dividing H_l as in grouped-query attention): then the fused linear is d -> (H_l + 2 G_l) D
and W_o is H_l D -> d (`common.Attention`).

Per-layer block width (`ModelConfig.block_widths`, the Variable-Width Transformers' axis): block l
works on the first w_l coordinates of the residual stream, its norms, q/k/v, W_o and MLP at width
w_l and its heads w_l / D by default. How the stream is truncated and carried between blocks of
different widths, how the embedding and the head connect, and the width-aware init: `common`.
"""

from __future__ import annotations

import torch
from torch import nn

from tlmsearch.core.base import ModelConfig
from tlmsearch.models.common import Attention, LanguageModel, RMSNorm, Rope, SwiGLU, scale_block_inputs


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer_idx: int) -> None:
        super().__init__()
        width = cfg.block_width(layer_idx)  # d_model unless per-layer block widths
        self.attn_norm = RMSNorm(width, cfg.norm_eps)
        self.attn = Attention(cfg, layer_idx)
        self.mlp_norm = RMSNorm(width, cfg.norm_eps)
        self.mlp = SwiGLU(width, cfg.mlp_widths[layer_idx])
        scale_block_inputs(cfg, layer_idx, self.mlp.w_gate, self.mlp.w_up)  # width-aware init (common)

    def forward(self, h: torch.Tensor, rope: Rope) -> torch.Tensor:
        h = h + self.attn(self.attn_norm(h), rope)  # (B, T, C)
        return h + self.mlp(self.mlp_norm(h))  # (B, T, C)


class Transformer(LanguageModel):
    block_cls = Block
