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

import dataclasses
from typing import TYPE_CHECKING

from tlmsearch.core.architectures import ArchSpec, attention_flops, chunks, linear_flops
from tlmsearch.core.base import ArchOptions, check_choice, check_field_types, check_positive
from tlmsearch.errors import ConfigError
from tlmsearch.models.counts import RECOMPUTE_MODES, attention_params, attention_width, qkv_width

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.core.base import ModelConfig

CONV_TAPS = 4  # width of the causal depthwise convolution on q, k, v


VARIANTS: tuple[str, ...] = ("mag", "mal")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TitansOptions(ArchOptions):
    """Options of titans: the variant, its attention window and its neural memory."""

    titans_variant: str = "mag"  # "mag" (memory as a gate) or "mal" (memory as a layer)
    n_persistent: int = 4  # learned persistent tokens prepended in every layer
    # sliding attention window in tokens (each query sees itself and the window - 1 positions before
    # it, plus the persistent tokens); 0 = full causal; -1 = auto, seq_len // 4 [OURS] (see attention_window)
    window: int = -1
    mem_heads: int = 0  # memory heads, each an MLP over d_model/mem_heads channels; 0 = n_heads
    mem_expansion: int = 2  # memory MLP hidden = mem_expansion * (d_model / mem_heads)
    mem_chunk: int = 16  # tokens per parallel memory update
    mem_theta_max: float = 0.03  # upper bound of the inner learning rate (measured choice [OURS])
    # clip each token's (normalised) inner gradient to this norm; 0 = no clipping. [OURS] 2: the
    # normalised step's norm is at most |M(k) - v| (about sqrt 2 for unit keys and values), so a clip at 2
    # is a safety net (<= 0.7% of updates over 300 steps; at 1 it clipped 12-31%, bench/README.md)
    mem_max_grad_norm: float = 2.0
    # values L2-normalised and each token's inner gradient divided by 1 + its Gauss-Newton
    # curvature (normalised-LMS step) [OURS]
    mem_normalized_update: bool = True
    # recompute the memory scans during backward instead of keeping every chunk's weights
    # ("auto": on CUDA only; saves most activation memory at GPU scale)
    recompute_memory: str = "auto"

    def __post_init__(self) -> None:
        check_field_types(self, "options.")
        check_choice("options.titans_variant", self.titans_variant, VARIANTS)
        check_positive("options.n_persistent", self.n_persistent, allow_zero=True)
        if self.window < -1:
            raise ConfigError(f"options.window={self.window} must be -1 (auto), 0 (full causal) or a positive length")
        check_positive("options.mem_heads", self.mem_heads, allow_zero=True)
        check_positive("options.mem_expansion", self.mem_expansion)
        check_positive("options.mem_chunk", self.mem_chunk)
        check_positive("options.mem_theta_max", self.mem_theta_max)
        check_positive("options.mem_max_grad_norm", self.mem_max_grad_norm, allow_zero=True)
        check_choice("options.recompute_memory", self.recompute_memory, RECOMPUTE_MODES)


def validate(cfg: ModelConfig) -> None:
    heads = TitansOptions.of(cfg).mem_heads
    if heads and cfg.d_model % heads:
        raise ConfigError(f"options.mem_heads={heads} does not divide d_model={cfg.d_model}")


def attention_window(cfg: ModelConfig) -> int:
    """The resolved attention window: `options.window`, or seq_len // 4 (at least 1) when it is -1
    (auto) [OURS: a quarter of the sequence leaves the long range to the memory, as MAG intends;
    the Titans paper's text gives no window size for its language models]; 0 = full causal."""
    w = TitansOptions.of(cfg).window
    return max(1, cfg.seq_len // 4) if w == -1 else w


def mem_heads(cfg: ModelConfig) -> int:
    return TitansOptions.of(cfg).mem_heads or cfg.n_heads


def memory_params(cfg: ModelConfig) -> int:
    """Parameters of one layer's neural memory MLP (its initial weights), all heads."""
    d_mem = cfg.d_model // mem_heads(cfg)
    return mem_heads(cfg) * 2 * d_mem * TitansOptions.of(cfg).mem_expansion * d_mem


def attention_pairs(cfg: ModelConfig) -> int:
    """(query, key) score pairs the attention computes over T~ = N_p + T positions
    (`common.causal_attention`): T~² for full causal attention or a window w >= T; for a
    window 0 < w < T, the chunked local attention's N_p² (persistent queries) plus
    ceil(T / w) blocks of w queries against N_p + 2w keys (`common.windowed_attention`)."""
    n_p, t, w = TitansOptions.of(cfg).n_persistent, cfg.seq_len, attention_window(cfg)
    if w <= 0 or w >= t:
        return (t + n_p) ** 2
    return n_p * n_p + -(-t // w) * w * (n_p + 2 * w)


def memory_scan_flops(cfg: ModelConfig) -> int:
    """Forward FLOPs of one layer's memory scan over T~ positions, all heads."""
    o = TitansOptions.of(cfg)
    h = mem_heads(cfg)
    d_mem = cfg.d_model // h
    df = d_mem * o.mem_expansion * d_mem
    n, b = chunks(cfg.seq_len + o.n_persistent, o.mem_chunk), o.mem_chunk
    return h * ((n - 1) * (18 * b * df + 16 * df) + 4 * b * df)


def gate_resampled(cfg: ModelConfig, layer: int) -> bool:
    """MAG with H_l != n_heads query heads: the memory gate is resampled to the attention's heads."""
    return TitansOptions.of(cfg).titans_variant == "mag" and cfg.query_heads(layer) != cfg.n_heads


def block_params(cfg: ModelConfig, layer: int) -> int:
    d, o = cfg.d_model, TitansOptions.of(cfg)
    n = 2 * d  # attention-input and MLP norms
    n += o.n_persistent * d
    n += attention_params(cfg, layer)  # attention q, k, v (d -> (H_l + 2 G_l) D) and W_o (H_l D -> d)
    n += 3 * d * d + 3 * d * CONV_TAPS  # memory q, k, v and their depthwise causal convs
    n += 3 * mem_heads(cfg) * (d + 1)  # θ, η, α gates (with bias) per memory head
    n += memory_params(cfg)
    return n + d + (attention_width(cfg, layer) if o.titans_variant == "mag" else 0)  # norm of m; MAG: of y


def block_flops(cfg: ModelConfig, layer: int) -> float:
    t, d, o = cfg.seq_len, cfg.d_model, TitansOptions.of(cfg)
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
    return 2 * (cfg.seq_len + TitansOptions.of(cfg).n_persistent) * cfg.head_dim * cfg.n_heads * cfg.query_heads(layer)


SPEC: ArchSpec[ModelConfig] = ArchSpec(
    model="tlmsearch.models.titans:Titans",
    summary="Titans: attention beside a neural memory trained at test time (MAG; MAL option)",
    block_params=block_params,
    block_flops=block_flops,
    frozen_flops=gate_resampling_flops,
    validate=validate,
    options=TitansOptions,
)
