"""Hope-attention (Behrouz et al., "Nested Learning", NeurIPS 2025, arXiv 2512.24695).

The Transformer with softmax attention as the sequence mixer and each MLP replaced by a
Continuum Memory System (CMS): a chain of K MLP levels, fastest first, level ℓ updating its
weights once every C_ℓ tokens (`options.cms_periods`, 0 = never):

    h = h + W_o · Attn(...)                                   as in the Transformer
    z_0 = h;  z_ℓ = z_{ℓ-1} + SwiGLU_ℓ(RMSNorm(z_{ℓ-1}))      ℓ = 1..K
    h = z_K

Default K = 2: a fast level (C_1 = 16) and a slow level that never updates in a sequence. A
level whose period is 0 or ≥ seq_len is an ordinary MLP trained by the outer loop only.

[OURS] choices (the paper leaves them open):
- Fast-level update: the level's SwiGLU weights θ start every sequence at their learned
  values; after every C_ℓ tokens they take one step θ ← θ - η_ℓ Σ_{t∈chunk} ∇_θ ||SwiGLU_ℓ(k_t) - v_t||²
  with k_t = u_t W_k, v_t = u_t W_v learned projections of the level's normalized input u_t and
  η_ℓ = softplus(·) a learned positive scalar (initial value 0.01). Tokens of chunk c read with
  the weights left after chunk c-1; the outer loss backpropagates through the steps. The
  gradient is computed in closed form for the whole chunk (three matmuls), no per-token loop.
- Normalised update (`cms_normalized_update`, default on): k_t is RMS-normalised (the scale
  of the level's own input u_t), v_t L2-normalised, and each token's gradient is divided by
  1 + c_t, c_t = ||∇_t||² / (4 ||SwiGLU(k_t) - v_t||²) its Gauss-Newton curvature (a
  normalised-LMS step, whose norm is at most the residual's, so about 1 or less). Without it
  the outer loop grows the k/v projections (|k|, |v| 2 -> 6 in 60 steps at d 64) and the
  fast steps diverged in our runs (NaN within 300 outer steps at lr 3e-3 with d 64, seq 128;
  within 5 steps at lr 1e-2); with the clip alone, 55-75% of token updates were clipped after
  50-100 outer steps.
- Each token's (normalised) gradient is then clipped to Frobenius norm `cms_max_grad_norm`
  (default 1; the per-token norm of an outer product is a product of vector norms, so this
  needs no per-token weights), a safety net whose rate the trainer reports (`inner_clip_frac`).
- In float32 and float64 (outside autocast) the fast level's scan runs as one autograd node with a
  hand-written backward (`hope_fused.FastSwiGLUScan`, equal to the autograd form up to rounding).
- The fast weights accumulate in float32 under autocast, and `options.recompute_memory`
  recomputes the scan in backward (default: on CUDA) instead of keeping every chunk's weights.
- Tapering: level ℓ of layer l gets hidden size round(f_l · s_ℓ) with shares s_ℓ
  (`options.cms_shares`, default equal), rounded by largest remainder so the levels of a layer
  sum exactly to f_l (`tlmsearch.models.hope_attention_spec.cms_level_widths`). W_k, W_v (2d² per fast
  level) and η are fixed overhead, the same in every profile.
- Each level has its own pre-norm; the level output projection W_down is scaled like every
  residual-stream output (N(0, init_std / sqrt(2L))).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tlmsearch.core.base import ModelConfig
from tlmsearch.models.common import (
    Attention,
    LanguageModel,
    RMSNorm,
    Rope,
    SwiGLU,
    count_clipped,
    fp32_baddbmm,
    fused_scan_applies,
    run_scan,
    silu_grad,
)
from tlmsearch.models.hope_attention_spec import HopeAttentionOptions, cms_level_widths
from tlmsearch.models.hope_fused import FastSwiGLUScan

INITIAL_STEP = 0.01  # initial η of the fast levels


def fast_swiglu_scan(
    u: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    lr: torch.Tensor,
    chunk: int,
    max_grad_norm: float = 0.0,
    normalized: bool = False,
    fused: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """SwiGLU read with weights that take one gradient step per chunk.

    u, k, v: (B, T, C); w_gate, w_up: (C, F) and w_down: (F, C) (right-multiplied: y = x W),
    the initial weights; lr: scalar. Tokens of chunk c read the weights left by chunks < c.
    With `max_grad_norm > 0` each token's gradient (of all three matrices together) is scaled
    to at most that Frobenius norm before it enters the chunk's sum. Returns the read (B, T, C)
    and, with clipping on, every updating token's gradient norm before clipping, (B, tokens),
    detached (for the clip rate); None without clipping. With `normalized`, each token's
    gradient is first divided by 1 + c_t, c_t = ||∇_t||² / (4 ||SwiGLU(k_t) - v_t||²), the
    level's Gauss-Newton curvature along that token's gradient (a normalised-LMS step: it
    shrinks exactly when the weights or the key scale would make the step overshoot).
    """
    bsz, t, c = u.shape
    f = w_gate.shape[1]
    n = -(-t // chunk)
    pad = n * chunk - t
    if pad:
        u, k, v = (F.pad(z, (0, 0, 0, pad)) for z in (u, k, v))  # (B, n*b, C)
    us, ks, vs = (z.view(bsz, n, chunk, c) for z in (u, k, v))  # (B, n, b, C)
    k_sq = ks.pow(2).sum(-1)  # (B, n, b) squared key norms, for the per-token gradient norms
    if fused and fused_scan_applies(u, w_gate):  # one autograd node, hand-written backward (hope_fused.py)
        wgu0 = torch.cat((w_gate, w_up), dim=1)  # (C, 2F)
        reads, sq = FastSwiGLUScan.apply(us, ks, vs, k_sq, wgu0, w_down, lr, max_grad_norm, normalized)
        norms_out = sq.flatten(1).sqrt() if max_grad_norm > 0 else None  # (B, (n-1) b)
        return reads.reshape(bsz, n * chunk, c)[:, :t], norms_out
    zs = torch.cat((us, ks), dim=2)  # (B, n, 2b, C): each chunk's reads and inner-loss inputs, one pass
    scaled_v = (2 * lr) * vs  # (B, n, b, C)
    wgu = torch.cat((w_gate, w_up), dim=1)  # (C, 2F), then (B, C, 2F) after the first step
    wd = w_down  # (F, C), then (B, F, C)
    # per-chunk views via unbind (its backward is one stack; indexing would zero-fill per chunk)
    u_c, k_c, z_c, sv_c, k_sq_c = (x.unbind(1) for x in (us, ks, zs, scaled_v, k_sq))
    outs, norms = [], []
    for i in range(n):
        # read the fast weights (kept in >= float32) in the activations' dtype (bf16 models)
        wgu_r, wd_r = wgu.to(u.dtype), wd.to(u.dtype)
        if i == n - 1:  # the last chunk's step is never read
            gate, up = (u_c[i] @ wgu_r).split(f, dim=-1)  # (B, b, F)
            outs.append((F.silu(gate) * up) @ wd_r)  # (B, b, C)
            break
        gate, up = (z_c[i] @ wgu_r).split(f, dim=-1)  # (B, 2b, F)
        act = F.silu(gate)
        hid = act * up  # (B, 2b, F)
        out_u, out_k = (hid @ wd_r).chunk(2, dim=1)  # (B, b, C) each
        outs.append(out_u)
        # r = -lr * dℓ/dout for ℓ = Σ_t ||out_t - v_t||²; the step is then W += X^T r-like products
        r = sv_c[i] - (2 * lr) * out_k  # (B, b, C)
        d_hid = r @ wd_r.transpose(-1, -2)  # (B, b, F)
        (_, g_k), (_, up_k), (_, act_k), (_, hid_k) = (x.chunk(2, dim=1) for x in (gate, up, act, hid))  # (B, b, F)
        d_gu = torch.cat((d_hid * up_k * silu_grad(g_k), d_hid * act_k), dim=-1)  # (B, b, 2F)
        if normalized or max_grad_norm > 0:  # per-token gradients are outer products: ||x^T y|| = ||x|| ||y||
            sq = k_sq_c[i] * d_gu.pow(2).sum(-1) + hid_k.pow(2).sum(-1) * r.pow(2).sum(-1)  # (B, b)
        if normalized:  # c_t = lr² ||∇_t||² / ||r_t||² with r_t = 2 lr (v_t - out_t)
            step = (1 + sq / (r.pow(2).sum(-1) + 1e-24)).reciprocal()  # (B, b)
            r, d_gu, sq = r * step.unsqueeze(-1), d_gu * step.unsqueeze(-1), sq * step.pow(2)
        if max_grad_norm > 0:
            norms.append(sq.detach() / lr.detach() ** 2)  # sq is lr² ||gradient||²
            clip = (max_grad_norm * lr * torch.rsqrt(sq + 1e-24)).clamp(max=1.0).unsqueeze(-1)  # (B, b, 1)
            r, d_gu = r * clip, d_gu * clip
        # fast weights accumulate in float32 even under autocast
        wd = fp32_baddbmm(wd.expand(bsz, f, c), hid_k.transpose(1, 2), r)  # (B, F, C)
        wgu = fp32_baddbmm(wgu.expand(bsz, c, 2 * f), k_c[i].transpose(1, 2), d_gu)  # (B, C, 2F)
    grad_norms = torch.cat(norms, dim=1).sqrt() if norms else None  # (B, (n-1) b)
    return torch.cat(outs, dim=1)[:, :t], grad_norms  # (B, T, C)


class CMSLevel(nn.Module):
    """One CMS level: z + SwiGLU(RMSNorm(z)), with test-time steps when `period` is fast."""

    clip_stats: torch.Tensor  # [clipped, total] inner-gradient clips while training (a buffer)

    def __init__(self, cfg: ModelConfig, width: int, period: int) -> None:
        super().__init__()
        self.period = period
        self.fast = 0 < period < cfg.seq_len
        o = HopeAttentionOptions.of(cfg)
        self.recompute = o.recompute_memory
        self.max_grad_norm = o.cms_max_grad_norm
        self.normalized = o.cms_normalized_update
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.mlp = SwiGLU(cfg.d_model, width)
        if self.fast:
            self.w_kv = nn.Linear(cfg.d_model, 2 * cfg.d_model, bias=False)
            self.lr_raw = nn.Parameter(torch.empty(()))
            # [clipped, total] token updates since the last read (training only)
            self.register_buffer("clip_stats", torch.zeros(2, dtype=torch.int64), persistent=False)

    def reset_extra_parameters(self) -> None:
        if self.fast:
            nn.init.constant_(self.lr_raw, math.log(math.expm1(INITIAL_STEP)))  # softplus^-1

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        u = self.norm(z)  # (B, T, C)
        if not self.fast:
            return z + self.mlp(u)
        k, v = self.w_kv(u).split(u.shape[-1], dim=-1)  # (B, T, C) each
        if self.normalized:  # keys on the scale of the level's input u (RMS 1), values of norm 1
            k, v = F.normalize(k, dim=-1) * math.sqrt(k.shape[-1]), F.normalize(v, dim=-1)
        mlp = self.mlp
        weights = (mlp.w_gate.weight.t(), mlp.w_up.weight.t(), mlp.w_down.weight.t())
        args = (u, k, v, *weights, F.softplus(self.lr_raw), self.period, self.max_grad_norm, self.normalized)
        out, norms = run_scan(fast_swiglu_scan, *args, recompute=self.recompute)  # (B, T, C)
        if self.training and norms is not None:
            count_clipped(self.clip_stats, norms, self.max_grad_norm)
        return z + out


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer_idx: int) -> None:
        super().__init__()
        o = HopeAttentionOptions.of(cfg)
        widths = cms_level_widths(cfg.mlp_widths[layer_idx], o.cms_shares, o.cms_levels)
        self.mlp_width = sum(widths)
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = Attention(cfg, layer_idx)
        self.levels = nn.ModuleList([CMSLevel(cfg, w, p) for w, p in zip(widths, o.cms_periods, strict=True)])

    def forward(self, h: torch.Tensor, rope: Rope) -> torch.Tensor:
        h = h + self.attn(self.attn_norm(h), rope)  # (B, T, C)
        for level in self.levels:
            h = level(h)  # (B, T, C)
        return h


class HopeAttention(LanguageModel):
    block_cls = Block
