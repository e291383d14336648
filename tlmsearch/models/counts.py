"""Analytic parameter counts and training FLOPs per token for every family (no torch).

These formulas must match the modules in this package exactly (a test builds models and
compares); they are used for budget parity, MFU and reports.

Parameter conventions
- `mlp`: the tapered MLP hidden units' parameters, `3 * d * sum(mlp_widths)` (SwiGLU). For
  Hope-attention the CMS levels of a layer split `f_l` exactly, so the same formula holds.
- `embedding`: the token embedding, plus the LM head when it is not tied.
- `non_embedding = total - embedding` (Kaplan et al. 2020 convention).

FLOPs per token (training: forward + backward), documented approximation:

    flops = 6 * (non_embedding + V * d)          # every weight used once per token, LM head included
          + 12 * L * d * T_ctx                   # attention scores and values (PaLM, App. B; full T x T)
          + extra                                # test-time learning inside the layers

- Transformer / Gated Attention: `extra = 0`; `T_ctx = seq_len`.
- Titans: `T_ctx = seq_len + n_persistent` (or window + n_persistent if smaller). The neural
  memory applies its weights several times per token: the forward at the chunk-start weights
  on k (2P), the closed-form inner backward (1P), the two weighted outer-product sums that
  form the new weights and momentum (4P), and the read on q (2P): 9P forward, 27P training,
  where P is the memory MLP's parameter count per layer. The read is already in 6N, so
  `extra = 21 * P` per layer. The persistent tokens' own projections are not counted.
- Hope-attention: every fast level (one that updates inside the sequence) runs its SwiGLU on
  k (2P), its weight gradient (8/3 P) and the read on u (2P, already in 6N): `extra = 14 * P`
  per fast level, P = 3 * d * f_level.
"""

from __future__ import annotations

from typing import NamedTuple

from tlmsearch.config import ModelConfig


class ParamCounts(NamedTuple):
    total: int
    non_embedding: int
    mlp: int
    embedding: int


def cms_level_widths(width: int, shares: tuple[float, ...], levels: int) -> tuple[int, ...]:
    """Split a layer's MLP width `width` over `levels` CMS levels, summing exactly to `width`.

    Shares default to equal; rounding uses the largest-remainder method, and every level keeps
    at least one unit (so `width >= levels` is required).
    """
    if width < levels:
        raise ValueError(f"mlp width {width} is smaller than the number of CMS levels {levels}")
    shares = shares or tuple(1.0 / levels for _ in range(levels))
    raw = [width * s for s in shares]
    out = [max(1, int(r)) for r in raw]
    rest = width - sum(out)
    order = sorted(range(levels), key=lambda i: (-(raw[i] - int(raw[i])), i))
    i = 0
    while rest != 0:  # hand out (or take back) units in remainder order
        j = order[i % levels]
        if rest > 0:
            out[j] += 1
            rest -= 1
        elif out[j] > 1:
            out[j] -= 1
            rest += 1
        i += 1
    return tuple(out)


def fast_levels(cfg: ModelConfig) -> tuple[bool, ...]:
    """Which CMS levels update inside a sequence: period p with 0 < p < seq_len."""
    return tuple(0 < p < cfg.seq_len for p in cfg.options.cms_periods)


def mem_heads(cfg: ModelConfig) -> int:
    return cfg.options.mem_heads or cfg.n_heads


def titans_memory_params(cfg: ModelConfig) -> int:
    """Parameters of one layer's neural memory MLP (its initial weights), all heads."""
    d_mem = cfg.d_model // mem_heads(cfg)
    return mem_heads(cfg) * 2 * d_mem * cfg.options.mem_expansion * d_mem


def _mixer_params(cfg: ModelConfig, layer: int) -> int:
    """Parameters of one block other than its tapered MLP (and its pre-MLP norm)."""
    d, h = cfg.d_model, cfg.n_heads
    if cfg.arch == "transformer":
        return 4 * d * d + d
    if cfg.arch == "gated_attention":
        gate = d if cfg.options.gate == "elementwise" else h
        return 4 * d * d + d * gate + d
    if cfg.arch == "titans":
        o = cfg.options
        n = d  # pre-mixer norm
        n += o.n_persistent * d
        n += 3 * d * d  # attention q, k, v
        n += 3 * d * d + 3 * 4 * d  # memory q, k, v and their depthwise causal convs (width 4)
        n += 3 * mem_heads(cfg) * (d + 1)  # theta, eta, alpha gates (with bias) per memory head
        n += titans_memory_params(cfg)
        n += 2 * d if o.titans_variant == "mag" else d  # MAG: norms of y and m; MAL: norm of m
        n += d * d  # W_o
        return n
    if cfg.arch == "hope_attention":
        n = 4 * d * d + d  # attention and its norm
        fast = fast_levels(cfg)
        n += (cfg.options.cms_levels - 1) * d  # one norm per level; the last uses the block's norm
        n += sum(2 * d * d + 1 for f in fast if f)  # fast levels: W_k, W_v and the step size
        return n
    raise ValueError(f"arch={cfg.arch!r} is unknown")


def count_params(cfg: ModelConfig) -> ParamCounts:
    """Exact parameter counts of `build_model(cfg)`."""
    d, v = cfg.d_model, cfg.vocab_size
    mlp = 3 * d * sum(cfg.mlp_widths)
    # every block: its mixer + the norm before its MLP + the MLP
    blocks = sum(_mixer_params(cfg, layer) + d for layer in range(cfg.n_layers)) + mlp
    embedding = v * d * (1 if cfg.tie_embeddings else 2)
    non_embedding = blocks + d  # + final norm
    return ParamCounts(total=non_embedding + embedding, non_embedding=non_embedding, mlp=mlp, embedding=embedding)


def flops_per_token(cfg: ModelConfig) -> float:
    """Training FLOPs per token (forward + backward); formula in the module docstring."""
    d, L, T = cfg.d_model, cfg.n_layers, cfg.seq_len
    counts = count_params(cfg)
    flops = 6.0 * (counts.non_embedding + cfg.vocab_size * d)
    t_ctx = T
    extra = 0.0
    if cfg.arch == "titans":
        t_ctx = T + cfg.options.n_persistent
        if cfg.options.window:  # the window plus the always-visible persistent tokens
            t_ctx = min(t_ctx, cfg.options.window + cfg.options.n_persistent)
        extra = 21.0 * titans_memory_params(cfg) * L
    elif cfg.arch == "hope_attention":
        fast = fast_levels(cfg)
        for width in cfg.mlp_widths:
            levels = cms_level_widths(width, cfg.options.cms_shares, cfg.options.cms_levels)
            extra += sum(14.0 * 3 * d * f for f, is_fast in zip(levels, fast, strict=True) if is_fast)
    return flops + 12.0 * L * d * t_ctx + extra
