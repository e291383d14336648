"""Counts of the Transformer (`transformer.py`); torch-free, see `spec.py`.

Block l: two RMSNorms (2d), fused q/k/v (3d²) and W_o (d²), then the tapered MLP; with per-layer
heads H_l, G_l: q/k/v d (H_l + 2 G_l) D and W_o H_l D d (`counts.attention_params`). Attention
scores every query against every key (T x T): `scaled_dot_product_attention` with
`is_causal=True` masks half of them, but the math backend still multiplies them all, and the
PaLM convention (App. B) counts them all too. With per-layer block widths (`block_widths`) every
d of block l is its width w_l: norms 2 w_l, q/k/v w_l (H_l + 2 G_l) D, W_o H_l D w_l.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tlmsearch.core.architectures import ArchSpec, attention_flops, linear_flops
from tlmsearch.models.counts import attention_params, attention_width, block_width, qkv_width

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.core.base import ModelConfig


def attention_block_params(cfg: ModelConfig, layer: int) -> int:
    """Two norms + q, k, v, o projections (the Transformer's block minus its MLP)."""
    return 2 * block_width(cfg, layer) + attention_params(cfg, layer)


def attention_mixer_flops(cfg: ModelConfig, layer: int) -> float:
    """Forward FLOPs of layer `layer`'s attention over one sequence: q/k/v projection, T x T
    scores and weighted values over its H_l query heads (key/value heads are shared, not
    recomputed), W_o."""
    t, w, a = cfg.seq_len, block_width(cfg, layer), attention_width(cfg, layer)
    return linear_flops(t, w, qkv_width(cfg, layer)) + attention_flops(t, t, a) + linear_flops(t, a, w)


def attention_block_flops(cfg: ModelConfig, layer: int) -> float:
    return attention_mixer_flops(cfg, layer)


SPEC: ArchSpec[ModelConfig] = ArchSpec(
    model="tlmsearch.models.transformer:Transformer",
    summary="Llama-style Transformer++ (RMSNorm, RoPE, SwiGLU)",
    block_params=attention_block_params,
    block_flops=attention_block_flops,
    block_widths=True,
)
