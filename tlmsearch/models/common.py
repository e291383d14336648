"""Parts shared by every family: RMSNorm, RoPE, SwiGLU, the causal attention core, and the
chassis (embedding -> blocks -> final norm -> LM head) with the shared initialisation.

Init (spec "Shared parts"): every Linear and the embedding ~ N(0, init_std); projections that
write into the residual stream (marked with `RESIDUAL_OUT = True`: W_o, W_down and their
equivalents) ~ N(0, init_std / sqrt(2L)). Embeddings are tied to the LM head by default.

Per-layer block width (`ModelConfig.block_widths`, families whose spec allows it): block l works
on the first w_l coordinates of the residual stream. `LanguageModel.forward` keeps one stream of
width W = max(d, max_l w_l): the embedding writes its d coordinates and the rest start at zero
(no earlier layer had them); block l reads the stream's first w_l coordinates, so a narrower block
sees its input truncated, and writes its output back over them, so the coordinates it does not
have keep the value the closest earlier layer that had them wrote (the embedding counts as that
layer for the first d; zeros where no layer had them): shrinking truncates, growing takes the
missing dimensions from the closest earlier output that had them, as the Variable-Width
Transformers' parameter-free resizing (Wu et al. 2026, arXiv 2606.18246). The first block reads
the embedding the same way (truncated when w_0 < d, zero-padded when w_0 > d), and the final
norm and LM head read the stream's first d coordinates after the last block: the last block's
output truncated to d, or completed from earlier layers when w_{L-1} < d. At constant width the
stream is the d-wide residual of every block and the forward is today's, operation for operation.

Width-aware init (muP-style, [OURS] for the base): a matrix whose fan-in is block l's width w_l
(the q/k/v (and gate) projection, W_gate and W_up of its MLP: they read the normalised w_l-wide
stream) is a muP hidden weight whose fan-in varies with width, so its init variance is kept
proportional to 1/fan_in with d_model as the base width:

    std_l = init_std * sqrt(d_model / w_l)            (= init_std when w_l = d_model)

(Tensor Programs V, Yang et al. 2022, Table 3; the Variable-Width Transformers train under muP).
Matrices whose fan-in is not the block width keep their std: W_o (fan-in the attention width
H_l D; per-layer heads keep it today) and W_down (fan-in f_l: the MLP width has its own rule,
`parametrization="width"`), each still / sqrt(2L) as a residual output; the embedding and LM head
stay at d_model; norm scales start at 1. A module carries its factor as `WIDTH_STD_SCALE`, so the
keyed init, which replays `_init_weights`, draws the same distribution.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch import nn

from tlmsearch.core.base import ModelConfig

Rope = tuple[torch.Tensor, torch.Tensor]  # cos, sin, each (T, head_dim / 2)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.to(torch.promote_types(x.dtype, torch.float32))  # bf16 -> float32; float64 stays float64
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.type_as(x) * self.weight


def rope_tables(length: int, head_dim: int, theta: float, device: torch.device | None = None) -> Rope:
    """cos and sin tables, each (length, head_dim / 2), in float32."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(length, device=device, dtype=torch.float32), inv_freq)  # (T, D/2)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, rope: Rope) -> torch.Tensor:
    """Rotate pairs (x[..., :D/2], x[..., D/2:]) of x (B, H, T, D) by position (half-split layout)."""
    cos, sin = rope
    t = x.shape[-2]
    cos, sin = cos[:t].to(x.dtype), sin[:t].to(x.dtype)  # (T, D/2)
    x1, x2 = x.chunk(2, dim=-1)  # (B, H, T, D/2) each
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (B, H, T, D)


def causal_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int = 0, prefix: int = 0
) -> torch.Tensor:
    """Causal softmax attention over (B, H, T, D) tensors. `window > 0` limits each query to
    the `window` most recent positions (itself included), except that the first `prefix`
    positions (Titans' persistent tokens) stay visible to every later query. A window
    shorter than the T - prefix other positions runs as chunked local attention
    (`windowed_attention`), whose cost grows with T·window instead of T²; its outputs are
    those of `masked_window_attention`, the plain masked form."""
    t = q.shape[-2]
    if window <= 0 or window >= t - prefix:  # every query sees all earlier positions
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return windowed_attention(q, k, v, window, prefix)


def masked_window_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int, prefix: int = 0
) -> torch.Tensor:
    """The sliding window as one full T x T score matrix with a mask: the reference that
    `windowed_attention` must equal (it costs T² whatever the window)."""
    i = torch.arange(q.shape[-2], device=q.device)
    recent = (i[None, :] > i[:, None] - window) | (i[None, :] < prefix)  # (T, T)
    allowed = (i[None, :] <= i[:, None]) & recent  # (T, T)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)


def windowed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int, prefix: int = 0) -> torch.Tensor:
    """Sliding-window causal attention computed block by block (block size w = `window`).

    The `prefix` positions attend causally among themselves (P x P scores). The other
    T' = T - P positions, zero-padded to nb = ceil(T'/w) blocks, are queried block by block:
    block n attends [the P prefix keys | block n-1 | block n] (P + 2w keys), masked so that
    query i sees key j iff j <= i and j > i - w (block 0 has no previous block). Scores
    computed: P² + nb·w·(P + 2w) per head, all of them on the math backend (the FLOP count
    in `titans_spec.attention_pairs` follows this).
    """
    b, h, t, d = q.shape
    w, n_p = window, prefix
    rest = t - n_p
    nb = -(-rest // w)
    pad = nb * w - rest
    qb, kb, vb = (F.pad(z[..., n_p:, :], (0, 0, 0, pad)).view(b, h, nb, w, d) for z in (q, k, v))  # (B, H, nb, w, D)

    def keys(z: torch.Tensor, zb: torch.Tensor) -> torch.Tensor:
        prev = F.pad(zb, (0, 0, 0, 0, 1, 0))[:, :, :-1]  # (B, H, nb, w, D): block n-1 (zeros before block 0)
        pre = z[..., :n_p, :].unsqueeze(2).expand(b, h, nb, n_p, d)  # (B, H, nb, P, D)
        return torch.cat((pre, prev, zb), dim=3).view(b, h * nb, n_p + 2 * w, d)  # (B, H nb, P + 2w, D)

    r = torch.arange(w, device=q.device)
    own = r[None, :] <= r[:, None]  # (w, w): key c of the own block, query row r
    before = r[None, :] > r[:, None]  # (w, w): key c of the previous block is within the window
    first = torch.arange(nb, device=q.device)[:, None, None] > 0  # (nb, 1, 1): block 0 has no previous
    mask = torch.cat(
        (torch.ones(nb, w, n_p, dtype=torch.bool, device=q.device), before & first, own.expand(nb, w, w)), dim=-1
    )  # (nb, w, P + 2w)
    y = F.scaled_dot_product_attention(
        qb.view(b, h * nb, w, d), keys(k, kb), keys(v, vb), attn_mask=mask.repeat(h, 1, 1)
    )  # (B, H nb, w, D)
    y = y.view(b, h, nb * w, d)[:, :, :rest]  # (B, H, T', D)
    if n_p == 0:
        return y
    y_p = F.scaled_dot_product_attention(q[..., :n_p, :], k[..., :n_p, :], v[..., :n_p, :], is_causal=True)
    return torch.cat((y_p, y), dim=2)  # (B, H, T, D)


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    b, t, c = x.shape
    return x.view(b, t, n_heads, c // n_heads).transpose(1, 2)  # (B, H, T, D)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)  # (B, T, C)


class SwiGLU(nn.Module):
    """`W_down(silu(W_gate x) * W_up x)` with an explicit hidden size; 3 * dim * hidden params."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.w_gate = nn.Linear(dim, hidden, bias=False)
        self.w_up = nn.Linear(dim, hidden, bias=False)
        self.w_down = nn.Linear(hidden, dim, bias=False)
        self.w_down.RESIDUAL_OUT = True  # type: ignore[assignment]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))  # (B, T, C)


def repeat_kv(x: torch.Tensor, query_heads: int) -> torch.Tensor:
    """Key or value heads (B, G, T, D) shared by groups of query heads (grouped-query attention):
    kv head j serves query heads j r .. (j + 1) r - 1, r = query_heads / G. A copy, no FLOPs;
    x itself when G = query_heads."""
    b, g, t, d = x.shape
    if g == query_heads:
        return x
    return x[:, :, None].expand(b, g, query_heads // g, t, d).reshape(b, query_heads, t, d)  # (B, H, T, D)


def scale_block_inputs(cfg: ModelConfig, layer: int, *linears: nn.Linear) -> None:
    """Mark `linears`, whose fan-in is block `layer`'s width w_l, for the width-aware init:
    std * sqrt(d_model / w_l) (module docstring); nothing when w_l = d_model."""
    width = cfg.block_width(layer)
    if width != cfg.d_model:
        for linear in linears:
            linear.WIDTH_STD_SCALE = math.sqrt(cfg.d_model / width)  # type: ignore[assignment]


class HeadShape:
    """Layer `layer`'s attention heads: H query heads and G key/value heads of `head_dim` each;
    `split` cuts a fused projection's output into q (H D), k (G D) and v (G D) heads."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        self.head_dim = cfg.head_dim
        self.heads = cfg.query_heads(layer)
        self.kv_heads = cfg.key_value_heads(layer)
        self.width = self.heads * self.head_dim  # the attention's width: W_o reads it
        self.kv_width = self.kv_heads * self.head_dim
        self.qkv_width = self.width + 2 * self.kv_width  # the fused q/k/v projection's outputs

    def split(self, qkv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, T, H D + 2 G D) -> q, k, v as (B, H, T, D), k and v repeated over their groups."""
        q, k, v = qkv.split([self.width, self.kv_width, self.kv_width], dim=-1)
        q = split_heads(q, self.heads)  # (B, H, T, D)
        k, v = (repeat_kv(split_heads(z, self.kv_heads), self.heads) for z in (k, v))  # (B, H, T, D)
        return q, k, v


class Attention(nn.Module):
    """Multi-head causal self-attention with RoPE and no biases (the Transformer's mixer), with
    layer `layer`'s query and key/value heads (`ModelConfig.query_heads`, `key_value_heads`):
    W_qkv d -> (H + 2G) D, W_o H D -> d. With H = G = n_heads it is d -> 3d and d -> d."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.shape = HeadShape(cfg, layer)
        width = cfg.block_width(layer)
        self.w_qkv = nn.Linear(width, self.shape.qkv_width, bias=False)
        self.w_o = nn.Linear(self.shape.width, width, bias=False)
        self.w_o.RESIDUAL_OUT = True  # type: ignore[assignment]
        scale_block_inputs(cfg, layer, self.w_qkv)

    def forward(self, x: torch.Tensor, rope: Rope) -> torch.Tensor:
        q, k, v = self.shape.split(self.w_qkv(x))  # (B, H, T, D) each
        y = causal_attention(apply_rope(q, rope), apply_rope(k, rope), v)  # (B, H, T, D)
        return self.w_o(merge_heads(y))  # (B, T, C)


class LanguageModel(nn.Module):
    """Token embedding -> `n_layers` blocks -> RMSNorm -> LM head; returns logits (B, T, V).

    Subclasses set `block_cls`, built as `block_cls(cfg, layer_idx)` and called as
    `block(h, rope)`; `extra_positions(cfg)` widens the RoPE table (Titans' persistent tokens).
    """

    block_cls: Callable[[ModelConfig, int], nn.Module]
    rope_cos: torch.Tensor
    rope_sin: torch.Tensor

    @staticmethod
    def extra_positions(cfg: ModelConfig) -> int:
        return 0

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.n_extra = self.extra_positions(cfg)
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList([type(self).block_cls(cfg, i) for i in range(cfg.n_layers)])
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed.weight
        cos, sin = rope_tables(cfg.seq_len + self.n_extra, cfg.head_dim, cfg.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init_weights)
        self.reset_extra_parameters()

    def _init_weights(self, module: nn.Module) -> None:
        std = self.cfg.init_std
        if isinstance(module, nn.Linear | nn.Embedding):
            if getattr(module, "RESIDUAL_OUT", False):
                std = std / math.sqrt(2 * self.cfg.n_layers)
            scale = getattr(module, "WIDTH_STD_SCALE", None)  # block width: the module docstring
            if scale is not None:
                std = std * scale
            nn.init.normal_(module.weight, mean=0.0, std=std)

    def reset_extra_parameters(self) -> None:
        """Initialise parameters that are not Linear/Embedding weights (blocks may define
        `reset_extra_parameters()` too, e.g. memory initial weights, gate biases)."""
        for module in self.modules():
            reset = getattr(module, "reset_extra_parameters", None)
            if module is not self and callable(reset):
                reset()

    def rope(self, length: int) -> Rope:
        if length <= self.rope_cos.shape[0]:
            return self.rope_cos, self.rope_sin
        return rope_tables(length, self.cfg.head_dim, self.cfg.rope_theta, self.rope_cos.device)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        b, t = idx.shape
        rope = self.rope(t + self.n_extra)
        h = self.embed(idx)  # (B, T, C)
        if self.cfg.block_widths:
            h = self.variable_width_blocks(h, rope)  # (B, T, C)
        else:
            for block in self.blocks:
                h = block(h, rope)  # (B, T, C)
        return self.lm_head(self.norm(h))  # (B, T, V)

    def variable_width_blocks(self, h: torch.Tensor, rope: Rope) -> torch.Tensor:
        """The blocks over one stream of width W = max(d, w_l): block l reads its first w_l
        coordinates and writes them back; the rest carry the closest earlier writer's values
        (zeros past d before any block wrote them). Returns the stream's first d coordinates."""
        widths = self.cfg.block_widths
        d = self.cfg.d_model
        stream = max(d, *widths)
        if stream > d:
            h = F.pad(h, (0, stream - d))  # (B, T, W): no earlier layer had these coordinates
        for block, w in zip(self.blocks, widths, strict=True):
            out = block(h[..., :w], rope)  # (B, T, w_l)
            h = torch.cat((out, h[..., w:]), dim=-1) if w < stream else out  # (B, T, W)
        return h[..., :d]  # (B, T, C)


def silu_grad(x: torch.Tensor) -> torch.Tensor:
    """d silu(x) / dx = sigmoid(x) * (1 + x * (1 - sigmoid(x)))."""
    s = torch.sigmoid(x)
    return s * (1 + x * (1 - s))


def run_scan(fn: Callable[..., Any], *args: Any, recompute: str) -> Any:
    """Run a test-time-learning scan, recomputing it during backward (activation checkpointing)
    when `recompute` is "always", or "auto" on CUDA: then only the scan's inputs are kept, not
    every chunk's weights, so a layer's weight trajectory lives only during its own backward."""
    on = recompute == "always" or (recompute == "auto" and args[0].is_cuda)
    if on and torch.is_grad_enabled():
        return torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)
    return fn(*args)


_FUSED_SCANS = [True]  # switched off inside `autograd_scans()` (benchmarks compare both forms)


@contextlib.contextmanager
def autograd_scans() -> Iterator[None]:
    """Run Titans' and Hope's scans in their autograd form inside this block (for side-by-side
    measurements, bench/bench_models.py `--scans both`); not thread-safe."""
    _FUSED_SCANS.append(False)
    try:
        yield
    finally:
        _FUSED_SCANS.pop()


def fused_scan_applies(x: torch.Tensor, w: torch.Tensor) -> bool:
    """Whether the scans take their fused single-node form (`titans_fused`, `hope_fused`):
    activations and weights both float32 or both float64, outside autocast (bf16 models and
    autocast keep the autograd form, which reads fp32 state in the activations' dtype), and
    not while torch.compile traces (it gets the autograd form, whose ops it can fuse itself)."""
    return (
        _FUSED_SCANS[-1]
        and not torch.compiler.is_compiling()
        and x.dtype == w.dtype
        and x.dtype in (torch.float32, torch.float64)
        and not torch.is_autocast_enabled(x.device.type)
    )


def fp32_baddbmm(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """`x + a @ b` in at least float32, even under autocast: test-time-learned weights add up
    many small steps, which bf16 would round away."""
    dtype = torch.promote_types(x.dtype, torch.float32)
    with torch.autocast(x.device.type, enabled=False):
        return torch.baddbmm(x.to(dtype), a.to(dtype), b.to(dtype))


def count_clipped(stats: torch.Tensor, grad_norms: torch.Tensor, max_norm: float) -> None:
    """Add to `stats` = [clipped, total] (int64) the token updates whose inner-gradient norm
    exceeded the safety clip `max_norm` (one comparison and two sums: cheap enough to run at
    every training step)."""
    n = torch.tensor(grad_norms.numel(), dtype=torch.int64, device=stats.device)
    stats.add_(torch.stack(((grad_norms > max_norm).sum(), n)))


def inner_clip_fraction(model: nn.Module, reset: bool = True) -> float | None:
    """Fraction of the test-time-learning token updates (Titans' memory, Hope's fast CMS
    levels) whose gradient the safety clip scaled down in training forward passes since the
    last reset, over all layers; None when the model has no clipped inner update (other
    families, clip disabled, or no training step yet). Reading it synchronises the device."""
    clipped = total = 0
    for module in model.modules():
        stats = getattr(module, "clip_stats", None)
        if isinstance(stats, torch.Tensor):
            c, t = (int(x) for x in stats.tolist())
            clipped, total = clipped + c, total + t
            if reset:
                stats.zero_()
    return clipped / total if total else None
