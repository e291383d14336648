"""Gated Attention (Qiu et al. 2025, arXiv 2505.06708): the Transformer with "G1" gating.

Each head's SDPA output, before the heads are concatenated and before W_o, is multiplied by
`sigmoid(x W_g)`, where x is the same normalized input that feeds q, k, v:

    y_h = SDPA(q_h, k_h, v_h) ⊙ sigmoid(x W_g)_h                 then  W_o · concat_h(y_h)

- `options.gate = "elementwise"` (default, the paper's recommended variant): W_g is d -> h·d_h,
  one gate per channel, +d² parameters per layer.
- `options.gate = "headwise"`: W_g is d -> h, one scalar gate per head, +d·h parameters.

[OURS] The gate logits come from the fused input projection, widened from 3d to 3d + d (or
3d + h) outputs; parameters are the same as a separate W_g. No bias on the gate (the paper's
gate is a plain linear map followed by a sigmoid). The MLP is the same tapered SwiGLU.
"""

from __future__ import annotations

import torch
from torch import nn

from tlmsearch.config import ModelConfig
from tlmsearch.models.common import (
    LanguageModel,
    RMSNorm,
    Rope,
    SwiGLU,
    apply_rope,
    causal_attention,
    merge_heads,
    split_heads,
)


class GatedAttention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.d_model = cfg.d_model
        self.gate_dim = cfg.d_model if cfg.options.gate == "elementwise" else cfg.n_heads
        self.w_qkvg = nn.Linear(cfg.d_model, 3 * cfg.d_model + self.gate_dim, bias=False)
        self.w_o = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.w_o.RESIDUAL_OUT = True  # type: ignore[assignment]

    def forward(self, x: torch.Tensor, rope: Rope) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v, g = self.w_qkvg(x).split([c, c, c, self.gate_dim], dim=-1)  # (B, T, C) x3, (B, T, G)
        q, k, v = (split_heads(z, self.n_heads) for z in (q, k, v))  # (B, H, T, D)
        y = causal_attention(apply_rope(q, rope), apply_rope(k, rope), v)  # (B, H, T, D)
        if self.gate_dim == c:
            gate = split_heads(g, self.n_heads)  # (B, H, T, D)
        else:
            gate = g.transpose(1, 2).unsqueeze(-1)  # (B, H, T, 1)
        y = y * torch.sigmoid(gate)  # (B, H, T, D)
        return self.w_o(merge_heads(y))  # (B, T, C)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer_idx: int) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = GatedAttention(cfg)
        self.mlp_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.mlp = SwiGLU(cfg.d_model, cfg.mlp_widths[layer_idx])

    def forward(self, h: torch.Tensor, rope: Rope) -> torch.Tensor:
        h = h + self.attn(self.attn_norm(h), rope)  # (B, T, C)
        return h + self.mlp(self.mlp_norm(h))  # (B, T, C)


class GatedAttentionLM(LanguageModel):
    block_cls = Block
