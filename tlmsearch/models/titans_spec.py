"""Counts of Titans (`titans.py`); torch-free, see `spec.py`.

Per block, with T~ = T + N_p (the persistent tokens go through every projection, the
attention and the memory; only W_o drops them), H memory heads of width D = d / H and memory
hidden F = mem_expansion * D, n = ceil(T~ / b) memory chunks of b tokens (the last one padded):

- attention: q/k/v over T~ (3d²), the attention over the score pairs it actually computes
  (`attention_pairs`), W_o over T (d²);
- memory: q/k/v over T~ (3d²), the depthwise causal conv (4 taps per channel over 3d
  channels), the θ/η/α gates (d -> 3H, with bias);
- the memory scan (`memory_scan_flops`, per head): every chunk but the last runs the memory on
  its reads and keys at once (2b rows through A2 and A1: 8bDF), the closed-form inner
  gradient (r A1^T: 2bDF), the weighted sums of outer products into the W and S updates (two
  coefficient sets for each of A2 and A1: 8bDF) and the 2x2 mix of (W, S) (2 x 8DF); the last
  chunk only reads (4bDF): its update would never be read, so it is not computed.

Parameters: the norms (attention input, m, and y for MAG; the MLP's), N_p d persistent
tokens, 2 x 3d² projections, 3 x 4d conv taps, 3H(d + 1) gates, the memory's initial weights
H * 2DF, and W_o.

Per-layer attention heads (H_l query, G_l key/value heads of size D_a = d / n_heads): the
attention's q/k/v is d -> (H_l + 2 G_l) D_a, W_o H_l D_a -> d, MAG's norm of y has H_l D_a
weights, and the scores run over H_l D_a channels. With H_l != n_heads, MAG resamples the
memory's gate from n_heads groups to H_l (`titans.gate_resampling`): a product of the
(T~, n_heads, D_a) read with a fixed (n_heads, H_l) matrix, 2 T~ D_a n_heads H_l FLOPs, whose
backward is one product (the matrix needs no gradient: `frozen_flops`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tlmsearch.configs.architectures import ArchSpec, attention_flops, chunks, linear_flops
from tlmsearch.models.counts import attention_params, attention_width, qkv_width

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.configs.base import ModelConfig

CONV_TAPS = 4  # width of the causal depthwise convolution on q, k, v


def mem_heads(cfg: ModelConfig) -> int:
    return cfg.options.mem_heads or cfg.n_heads


def memory_params(cfg: ModelConfig) -> int:
    """Parameters of one layer's neural memory MLP (its initial weights), all heads."""
    d_mem = cfg.d_model // mem_heads(cfg)
    return mem_heads(cfg) * 2 * d_mem * cfg.options.mem_expansion * d_mem


def attention_pairs(cfg: ModelConfig) -> int:
    """(query, key) score pairs the attention computes over T~ = N_p + T positions
    (`common.causal_attention`): T~² for full causal attention or a window w >= T; for a
    window 0 < w < T, the chunked local attention's N_p² (persistent queries) plus
    ceil(T / w) blocks of w queries against N_p + 2w keys (`common.windowed_attention`)."""
    n_p, t, w = cfg.options.n_persistent, cfg.seq_len, cfg.attention_window()
    if w <= 0 or w >= t:
        return (t + n_p) ** 2
    return n_p * n_p + -(-t // w) * w * (n_p + 2 * w)


def memory_scan_flops(cfg: ModelConfig) -> int:
    """Forward FLOPs of one layer's memory scan over T~ positions, all heads."""
    o = cfg.options
    h = mem_heads(cfg)
    d_mem = cfg.d_model // h
    df = d_mem * o.mem_expansion * d_mem
    n, b = chunks(cfg.seq_len + o.n_persistent, o.mem_chunk), o.mem_chunk
    return h * ((n - 1) * (18 * b * df + 16 * df) + 4 * b * df)


def gate_resampled(cfg: ModelConfig, layer: int) -> bool:
    """MAG with H_l != n_heads query heads: the memory gate is resampled to the attention's heads."""
    return cfg.options.titans_variant == "mag" and cfg.query_heads(layer) != cfg.n_heads


def block_params(cfg: ModelConfig, layer: int) -> int:
    d, o = cfg.d_model, cfg.options
    n = 2 * d  # attention-input and MLP norms
    n += o.n_persistent * d
    n += attention_params(cfg, layer)  # attention q, k, v (d -> (H_l + 2 G_l) D) and W_o (H_l D -> d)
    n += 3 * d * d + 3 * d * CONV_TAPS  # memory q, k, v and their depthwise causal convs
    n += 3 * mem_heads(cfg) * (d + 1)  # θ, η, α gates (with bias) per memory head
    n += memory_params(cfg)
    return n + d + (attention_width(cfg, layer) if o.titans_variant == "mag" else 0)  # norm of m; MAG: of y


def block_flops(cfg: ModelConfig, layer: int) -> float:
    t, d, o = cfg.seq_len, cfg.d_model, cfg.options
    tx, a = t + o.n_persistent, attention_width(cfg, layer)
    flops = linear_flops(tx, d, qkv_width(cfg, layer)) + attention_flops(1, attention_pairs(cfg), a)  # attention
    flops += linear_flops(tx, d, 3 * d) + 2 * tx * 3 * d * CONV_TAPS  # memory q, k, v and conv
    flops += linear_flops(tx, d, 3 * mem_heads(cfg)) + memory_scan_flops(cfg)  # gates and scan
    flops += gate_resampling_flops(cfg, layer)
    return flops + linear_flops(t, a, d)  # W_o on the T real positions


def gate_resampling_flops(cfg: ModelConfig, layer: int) -> int:
    """MAG's gate resampled from n_heads groups of D to H_l, at every one of the T~ positions: a
    product with a fixed matrix (its backward reaches the read only: `frozen_flops`)."""
    if not gate_resampled(cfg, layer):
        return 0
    return 2 * (cfg.seq_len + cfg.options.n_persistent) * cfg.head_dim * cfg.n_heads * cfg.query_heads(layer)


SPEC: ArchSpec[ModelConfig] = ArchSpec(
    model="tlmsearch.models.titans:Titans",
    summary="Titans: attention beside a neural memory trained at test time (MAG; MAL option)",
    block_params=block_params,
    block_flops=block_flops,
    frozen_flops=gate_resampling_flops,
)
