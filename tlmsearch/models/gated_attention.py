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

Per-layer heads (`ModelConfig.attn_heads`, `kv_heads`): layer l's H_l query heads are gated
(elementwise: H_l D gates; headwise: H_l), its G_l key/value heads are shared by groups of
query heads (grouped-query attention); the input projection is d -> (H_l + 2 G_l) D + gates.

Per-layer block width (`ModelConfig.block_widths`): block l's norms, projections and MLP work at
its width w_l, as in the Transformer (`common`: the stream's resizing and the width-aware init).
"""

from __future__ import annotations

import torch
from torch import nn

from tlmsearch.core.base import ModelConfig
from tlmsearch.models.common import (
    HeadShape,
    LanguageModel,
    RMSNorm,
    Rope,
    SwiGLU,
    apply_rope,
    causal_attention,
    merge_heads,
    scale_block_inputs,
    split_heads,
)
from tlmsearch.models.gated_attention_spec import gate_width


class GatedAttention(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.shape = HeadShape(cfg, layer)
        self.gate_dim = gate_width(cfg, layer)
        width = cfg.block_width(layer)
        self.w_qkvg = nn.Linear(width, self.shape.qkv_width + self.gate_dim, bias=False)
        self.w_o = nn.Linear(self.shape.width, width, bias=False)
        self.w_o.RESIDUAL_OUT = True  # type: ignore[assignment]
        scale_block_inputs(cfg, layer, self.w_qkvg)

    def forward(self, x: torch.Tensor, rope: Rope) -> torch.Tensor:
        qkv, g = self.w_qkvg(x).split([self.shape.qkv_width, self.gate_dim], dim=-1)  # (B, T, (H+2G)D), (B, T, g)
        q, k, v = self.shape.split(qkv)  # (B, H, T, D) each
        y = causal_attention(apply_rope(q, rope), apply_rope(k, rope), v)  # (B, H, T, D)
        if self.gate_dim == self.shape.width:
            gate = split_heads(g, self.shape.heads)  # (B, H, T, D)
        else:
            gate = g.transpose(1, 2).unsqueeze(-1)  # (B, H, T, 1)
        y = y * torch.sigmoid(gate)  # (B, H, T, D)
        return self.w_o(merge_heads(y))  # (B, T, C)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer_idx: int) -> None:
        super().__init__()
        width = cfg.block_width(layer_idx)  # d_model unless per-layer block widths
        self.attn_norm = RMSNorm(width, cfg.norm_eps)
        self.attn = GatedAttention(cfg, layer_idx)
        self.mlp_norm = RMSNorm(width, cfg.norm_eps)
        self.mlp = SwiGLU(width, cfg.mlp_widths[layer_idx])
        scale_block_inputs(cfg, layer_idx, self.mlp.w_gate, self.mlp.w_up)  # width-aware init (common)

    def forward(self, h: torch.Tensor, rope: Rope) -> torch.Tensor:
        h = h + self.attn(self.attn_norm(h), rope)  # (B, T, C)
        return h + self.mlp(self.mlp_norm(h))  # (B, T, C)


class GatedAttentionLM(LanguageModel):
    block_cls = Block
