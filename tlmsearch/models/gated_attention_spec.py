"""Counts of Gated Attention (`gated_attention.py`); torch-free, see `spec.py`.

The Transformer's block with the input projection widened by the gate logits: d -> 3d + g,
g = d (elementwise G1 gate, default) or g = n_heads (headwise).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tlmsearch.architectures import ArchSpec, attention_flops, linear_flops

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.config import ModelConfig


def gate_width(cfg: ModelConfig) -> int:
    return cfg.d_model if cfg.options.gate == "elementwise" else cfg.n_heads


def block_params(cfg: ModelConfig, layer: int) -> int:
    d = cfg.d_model
    return 2 * d + 4 * d * d + d * gate_width(cfg)


def block_flops(cfg: ModelConfig, layer: int) -> float:
    t, d = cfg.seq_len, cfg.d_model
    return linear_flops(t, d, 3 * d + gate_width(cfg)) + attention_flops(t, t, d) + linear_flops(t, d, d)


SPEC: ArchSpec[ModelConfig] = ArchSpec(
    model="tlmsearch.models.gated_attention:GatedAttentionLM",
    summary="Transformer with a sigmoid gate on each head's attention output (Qiu et al. G1)",
    block_params=block_params,
    block_flops=block_flops,
)
