"""Counts of the Transformer (`transformer.py`); torch-free, see `spec.py`.

Block l: two RMSNorms (2d), fused q/k/v (3d²) and W_o (d²), then the tapered MLP. Attention
scores every query against every key (T x T): `scaled_dot_product_attention` with
`is_causal=True` masks half of them, but the math backend still multiplies them all, and the
PaLM convention (App. B) counts them all too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tlmsearch.architectures import ArchSpec, attention_flops, linear_flops

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.config import ModelConfig


def attention_block_params(cfg: ModelConfig, layer: int) -> int:
    """Two norms + q, k, v, o projections (the Transformer's block minus its MLP)."""
    d = cfg.d_model
    return 2 * d + 4 * d * d


def attention_block_flops(cfg: ModelConfig, layer: int) -> float:
    t, d = cfg.seq_len, cfg.d_model
    return linear_flops(t, d, 3 * d) + attention_flops(t, t, d) + linear_flops(t, d, d)


SPEC: ArchSpec[ModelConfig] = ArchSpec(
    model="tlmsearch.models.transformer:Transformer",
    summary="Llama-style Transformer++ (RMSNorm, RoPE, SwiGLU)",
    block_params=attention_block_params,
    block_flops=attention_block_flops,
)
