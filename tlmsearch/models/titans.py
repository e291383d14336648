"""Titans (Behrouz, Zhong, Mirrokni 2025, arXiv 2501.00663): attention plus a neural memory
that learns at test time. MAG (memory as a gate) by default, MAL (memory as a layer) as an
option (`options.titans_variant`).

Per layer, with x = RMSNorm(h) and x̃ = [P ; x] (N_p learned persistent tokens prepended):

- attention branch: y = causal attention with RoPE over x̃, sliding-window by default as in
  the paper's MAG (`titans_spec.attention_window`: `options.window`, auto = seq_len // 4;
  computed block by block, `common.windowed_attention`); the persistent tokens stay visible to
  every query, as in the paper's attention masks;
- memory branch: q, k, v = SiLU(conv4(x̃ W_{q,k,v})), q and k (and, by default, v) L2-normalised per memory head;
  gates θ_t = θ_max σ(x̃_t w_θ), η_t = σ(x̃_t w_η), α_t = σ(x̃_t w_α); memory
  M_W(z) = z + act(z A2) A1 with initial weights W_0 = (A2, A1) trained by the outer loop and
  reset at every sequence; inner loss ||M_W(k_t) - v_t||²; chunked update (chunk b):
  u_t = ∇ℓ_t(W_c) at chunk-start weights, S_t = η_t S_{t-1} - θ_t u_t (carried across chunks),
  W_t = (1 - α_t) W_{t-1} + S_t; tokens of chunk c read m_t = M_{W_c}(q_t);
- MAG: o = W_o [RMSNorm(y) ⊙ σ(RMSNorm(m))];  MAL: o = W_o Attn(RMSNorm(m));
  drop the N_p persistent positions; h = h + o; then h = h + SwiGLU_l(RMSNorm(h)) (tapered).

Chunk update without per-token weights: within a chunk the momentum/decay recurrence is
linear with scalar coefficients, so (writing E_t = Π_{j≤t} η_j, A_t = Π_{j≤t} (1 - α_j))

    W_{c+1} = A_b W_c + (Σ_s A_b/A_s E_s) S_c - Σ_i θ_i (Σ_{s≥i} A_b/A_s · E_s/E_i) u_i
    S_{c+1} = E_b S_c - Σ_i θ_i E_b/E_i u_i

and every u_i is an outer product (closed-form gradient of the 2-layer MLP), so each Σ_i is
one matmul. The scalar coefficients are computed in log space for all chunks at once; the
pair (W, S) then moves by one 2x2 mix per chunk (a single baddbmm, kept in float32 under
autocast). The only Python loop is over chunks (each depends on the previous one's weights).
In float32 and float64 (outside autocast) the scan runs as one autograd node with a
hand-written backward (`titans_fused.MemoryScan`, equal to this form up to rounding).
`options.recompute_memory` recomputes the scan in backward (default: on CUDA) so a layer's
weight trajectory is not kept for the whole backward pass.

[OURS] choices where the papers leave details open:
- the combination rule of MAG above (spec); MAL feeds RMSNorm(m) to attention;
- per-layer attention heads (`ModelConfig.attn_heads`, `kv_heads`): the attention branch of
  layer l has H_l query heads and G_l key/value heads of head size D = d / n_heads (q/k/v
  d -> (H_l + 2 G_l) D, W_o H_l D -> d); the memory branch keeps its width d. In MAG the
  attention output y (H_l D channels, normalised over them) is gated head by head: the
  memory's normalised read, taken as n_heads groups of D channels, is resampled to H_l groups
  by the fixed averaging matrix `gate_resampling(H_l, n_heads)` (query head i averages the
  memory groups overlapping its share [i/H_l, (i+1)/H_l) of the depth of the head axis,
  weighted by the overlap; the identity when H_l = n_heads, so the uniform model is today's).
  It has no parameters and lets every memory channel reach the gate;
- memory split into `options.mem_heads` heads (default n_heads), each an MLP over
  d_model/mem_heads channels with hidden `mem_expansion` times that, act = SiLU;
- gates are linear maps with a bias, initialised so that θ = θ_max/2, η ≈ 0.9, α ≈ 0.01;
- the inner update is normalised (`mem_normalized_update`, default on): v is L2-normalised
  like q and k (the memory's read goes through RMSNorm, so v's scale was free, and at d 768
  it put 55% of token updates above the clip at init; 2.7% with unit values), and each
  token's gradient u_t is divided by 1 + c_t, c_t = ||u_t||² / (4 ||M(k_t) - v_t||²) the memory's Gauss-Newton
  curvature along u_t, and θ_max = 0.03. The rule as specified diverges: a 2-layer memory's
  inner curvature grows with its own weights within a sequence, and the chunk sum and the
  momentum multiply the step (at θ_max 0.1, cpu-s, initialisation, real text: NaN by the
  middle of the sequence without a clip, 73% of token updates clipped with it). The
  normalised step shrinks exactly when the curvature would make it overshoot (a
  normalised-LMS step; ||u_t|| / (1 + c_t) <= ||M(k_t) - v_t||), and θ_max was chosen from
  measurements (0.1: finite but 66% of tokens above the clip at init; 0.03: 0.1%; 0.01: 0%
  at init but a worse fit, more clipping after training, bench/README.md "inner updates");
- each token's (normalised) gradient is then clipped to Frobenius norm `mem_max_grad_norm`
  (default 2) as a safety net; the trainer reports the clipped share as `inner_clip_frac`.
  The normalised step's norm is at most ||M(k_t) - v_t|| (||u|| / (1 + c) <= ||u|| / (2 sqrt c)),
  about sqrt 2 for unrelated unit keys and values, so a clip at 1 sat inside the normal range
  (12-31% of updates clipped over 300 steps, cpu-xs with 8 layers) while one at 2 engages
  only where the residual grows past that range (at most 0.7% of updates in any evaluation
  interval over 300 steps at that shape, seeds 0 and 1, with a fit as good or better;
  bench/README.md "Titans' clip after training");
- the causal convs start as the identity (last tap 1); A2 ~ N(0, std 1/d_mem), A1 ~ N(0, std init_std);
- the sequence is zero-padded at the end to a whole number of chunks (the last chunk never
  updates, so padding cannot reach real tokens);
- the memory's width is fixed per layer and never tapered; only the block MLP is.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
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
    count_clipped,
    fp32_baddbmm,
    fused_scan_applies,
    merge_heads,
    run_scan,
    silu_grad,
)
from tlmsearch.models.titans_fused import MemoryScan
from tlmsearch.models.titans_spec import TitansOptions, attention_window, mem_heads


def chunk_coefficients(
    theta: torch.Tensor, log_eta: torch.Tensor, log_keep: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Scalar coefficients of the chunk update, for (..., n_chunks, b) gate tensors.

    Returns (keep_W, carry_W, coef_W, keep_S, coef_S) such that
    W' = keep_W W + carry_W S - Σ_i coef_W[i] u_i and S' = keep_S S - Σ_i coef_S[i] u_i.
    """
    b = theta.shape[-1]
    l_e = log_eta.cumsum(-1)  # (..., n, b) log E_t
    l_a = log_keep.cumsum(-1)  # (..., n, b) log A_t
    l_a_end, l_e_end = l_a[..., -1:], l_e[..., -1:]  # (..., n, 1)
    # expo[s, i] = log(A_b/A_s · E_s/E_i) for i <= s
    expo = (l_a_end - l_a + l_e)[..., :, None] - l_e[..., None, :]  # (..., n, b, b)
    lower = torch.ones(b, b, dtype=torch.bool, device=theta.device).tril()
    weights = torch.where(lower, expo, torch.full_like(expo, -math.inf)).exp()  # (..., n, b, b)
    coef_w = theta * weights.sum(-2)  # (..., n, b)
    carry_w = (l_a_end - l_a + l_e).exp().sum(-1)  # (..., n)
    coef_s = theta * (l_e_end - l_e).exp()  # (..., n, b)
    return l_a_end[..., 0].exp(), carry_w, coef_w, l_e_end[..., 0].exp(), coef_s


def memory_scan(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    theta: torch.Tensor,
    log_eta: torch.Tensor,
    log_keep: torch.Tensor,
    a2: torch.Tensor,
    a1: torch.Tensor,
    chunk: int,
    max_grad_norm: float = 0.0,
    normalized: bool = False,
    fused: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Read the test-time-trained memory M(z) = z + silu(z A2) A1 at every position.

    q, k, v: (B, H, T, D); theta, log_eta (log η), log_keep (log(1 - α)): (B, H, T);
    a2: (H, D, F), a1: (H, F, D) initial weights. Returns m: (B, H, T, D), where tokens of
    chunk c read the weights W_c left by chunks < c. With `max_grad_norm > 0` each token's
    inner gradient u_t is scaled to at most that Frobenius norm (||k^T g|| = ||k|| ||g|| for
    an outer product, so the norm costs no per-token weight tensor), and the second result
    holds every updating token's gradient norm before clipping, (BH, tokens), detached (for
    the clip rate); it is None without clipping. With `normalized`, each token's gradient is
    first divided by 1 + c_t, c_t = ||u_t||² / (4 ||r_t||²) (r_t = M(k_t) - v_t): c_t is the
    memory's Gauss-Newton curvature along that token's update, so the step shrinks exactly
    when the memory's own weights would make it overshoot (a normalised-LMS step).
    """
    bsz, n_h, t, d = q.shape
    f = a2.shape[-1]
    bh = bsz * n_h
    n = -(-t // chunk)
    pad = n * chunk - t
    if pad:
        q, k, v = (F.pad(z, (0, 0, 0, pad)) for z in (q, k, v))  # (B, H, n*b, D)
        theta, log_eta, log_keep = (F.pad(z, (0, pad)) for z in (theta, log_eta, log_keep))
    qs, ks, vs = (z.reshape(bh, n, chunk, d) for z in (q, k, v))  # (BH, n, b, D)
    zs = torch.cat((qs, ks), dim=2)  # (BH, n, 2b, D): each chunk's reads and inner-loss inputs, one pass
    state = torch.promote_types(a2.dtype, torch.float32)  # gates and momentum: at least fp32
    keep_w, carry_w, coef_w, keep_s, coef_s = chunk_coefficients(
        *(z.to(state).reshape(bh, n, chunk) for z in (theta, log_eta, log_keep))
    )
    # the factor -2 of the step -θ dℓ/dM = -2θ (M(k) - v) goes into the token coefficients
    coefs = -2 * torch.stack((coef_w, coef_s), dim=2)[..., None]  # (BH, n, 2, b, 1) [W-coef, S-coef]
    # state (W, S) -> (keep_W W + carry_W S, keep_S S): a 2x2 mix per (BH, chunk)
    zero = torch.zeros_like(keep_w)
    mix = torch.stack((torch.stack((keep_w, carry_w), -1), torch.stack((zero, keep_s), -1)), -2)  # (BH, n, 2, 2)
    k_sq = ks.pow(2).sum(-1)  # (BH, n, b) squared key norms, for the per-token gradient norms
    if fused and fused_scan_applies(q, a2):  # one autograd node, hand-written backward (titans_fused.py)
        w2_0, w1_0 = (w.unsqueeze(0).expand(bsz, -1, -1, -1).reshape(bh, *w.shape[1:]) for w in (a2, a1))
        reads, sq = MemoryScan.apply(zs, vs, k_sq, coefs[..., 0], mix, w2_0, w1_0, max_grad_norm, normalized)
        norms_out = sq.flatten(1).sqrt() if max_grad_norm > 0 else None  # (BH, (n-1) b)
        return reads.reshape(bh, n * chunk, d)[:, :t].reshape(bsz, n_h, t, d), norms_out
    # state X = [W ; S] stacked on dim 1; the momentum S starts at zero every sequence
    x2 = torch.stack((a2.to(state), torch.zeros_like(a2, dtype=state)), 1)  # (H, 2, D, F)
    x1 = torch.stack((a1.to(state), torch.zeros_like(a1, dtype=state)), 1)  # (H, 2, F, D)
    x2, x1 = (x.unsqueeze(0).expand(bsz, -1, -1, -1, -1).reshape(bh, 2, -1) for x in (x2, x1))  # (BH, 2, D*F)
    # per-chunk views via unbind (its backward is one stack; indexing would zero-fill per chunk)
    q_c, k_c, v_c, z_c, coef_c, mix_c, k_sq_c = (x.unbind(1) for x in (qs, ks, vs, zs, coefs, mix, k_sq))
    outs, norms = [], []
    for c in range(n):
        w2, w1 = x2[:, 0].view(bh, d, f).to(a2.dtype), x1[:, 0].view(bh, f, d).to(a1.dtype)  # W_c
        if c == n - 1:  # the last chunk's update is never read
            qc = q_c[c]  # (BH, b, D)
            outs.append(torch.baddbmm(qc, F.silu(qc @ w2), w1))  # (BH, b, D)
            break
        a = z_c[c] @ w2  # (BH, 2b, F)
        act = F.silu(a)
        out_q, out_k = torch.baddbmm(z_c[c], act, w1).chunk(2, dim=1)  # (BH, b, D) each; M(z) = z + act A1
        outs.append(out_q)
        act_k, a_k, kc = act.chunk(2, dim=1)[1], a.chunk(2, dim=1)[1], k_c[c]  # (BH, b, F) x2, (BH, b, D)
        r = out_k - v_c[c]  # (BH, b, D) half of dℓ/dM
        g = (r @ w1.transpose(1, 2)) * silu_grad(a_k)  # (BH, b, F) half of dℓ/da
        if normalized:  # c_t = ||u_t||² / (4 ||r_t||²) = ||k_t||² ||g_t||² / ||r_t||² + ||act_t||²
            r_sq = r.pow(2).sum(-1)  # (BH, b)
            curv = k_sq_c[c] * g.pow(2).sum(-1) / (r_sq + 1e-12) + act_k.pow(2).sum(-1)  # (BH, b)
            step = (1 + curv).reciprocal().unsqueeze(-1)  # (BH, b, 1)
            g, r = g * step, r * step
        if max_grad_norm > 0:  # ||u_t||² = 4 (||k_t||² ||g_t||² + ||act_t||² ||r_t||²)
            sq = 4 * (k_sq_c[c] * g.pow(2).sum(-1) + act_k.pow(2).sum(-1) * r.pow(2).sum(-1))  # (BH, b)
            norms.append(sq.detach())
            clip = (max_grad_norm * torch.rsqrt(sq + 1e-12)).clamp(max=1.0).unsqueeze(-1)  # (BH, b, 1)
            g, r = g * clip, r * clip
        # Σ_i coef_i u_i for u_i = (k_i^T g_i, act_i^T r_i): W and S coefficients in one matmul each
        cf = coef_c[c].to(g.dtype)  # (BH, 2, b, 1) in the activations' dtype (bf16 models)
        upd2 = kc.transpose(1, 2).unsqueeze(1) @ (g.unsqueeze(1) * cf)  # (BH, 2, D, F)
        upd1 = act_k.transpose(1, 2).unsqueeze(1) @ (r.unsqueeze(1) * cf)  # (BH, 2, F, D)
        x2 = fp32_baddbmm(upd2.reshape(bh, 2, -1), mix_c[c], x2)  # (BH, 2, D*F)
        x1 = fp32_baddbmm(upd1.reshape(bh, 2, -1), mix_c[c], x1)  # (BH, 2, F*D)
    grad_norms = torch.cat(norms, dim=1).sqrt() if norms else None  # (BH, (n-1) b)
    return torch.cat(outs, dim=1)[:, :t].reshape(bsz, n_h, t, d), grad_norms  # (B, H, T, D)


class NeuralMemory(nn.Module):
    """Titans' long-term memory: per-head deep MLP trained at test time, chunk-parallel."""

    clip_stats: torch.Tensor  # [clipped, total] inner-gradient clips while training (a buffer)

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.n_heads = mem_heads(cfg)
        self.d_mem = d // self.n_heads
        o = TitansOptions.of(cfg)
        self.chunk = o.mem_chunk
        self.theta_max = o.mem_theta_max
        self.recompute = o.recompute_memory
        self.max_grad_norm = o.mem_max_grad_norm
        self.normalized = o.mem_normalized_update
        self.init_std = cfg.init_std
        hidden = o.mem_expansion * self.d_mem
        self.w_qkv = nn.Linear(d, 3 * d, bias=False)
        self.conv = nn.Conv1d(3 * d, 3 * d, kernel_size=4, groups=3 * d, bias=False)
        self.w_gates = nn.Linear(d, 3 * self.n_heads, bias=True)
        self.a2 = nn.Parameter(torch.empty(self.n_heads, self.d_mem, hidden))
        self.a1 = nn.Parameter(torch.empty(self.n_heads, hidden, self.d_mem))
        # [clipped, total] token updates since the last read (training only); int64, so a
        # wholesale dtype change of the model leaves the counts alone
        self.register_buffer("clip_stats", torch.zeros(2, dtype=torch.int64), persistent=False)

    def reset_extra_parameters(self) -> None:
        with torch.no_grad():
            self.conv.weight.zero_()
            self.conv.weight[:, 0, -1] = 1.0  # identity: start as a pointwise map
            h = self.n_heads
            self.w_gates.bias[:h] = 0.0  # θ = θ_max / 2
            self.w_gates.bias[h : 2 * h] = math.log(0.9 / 0.1)  # η ≈ 0.9
            self.w_gates.bias[2 * h :] = math.log(0.01 / 0.99)  # α ≈ 0.01
        nn.init.normal_(self.a2, std=1.0 / self.d_mem)
        nn.init.normal_(self.a1, std=self.init_std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        h = self.n_heads
        qkv = self.conv(F.pad(self.w_qkv(x).transpose(1, 2), (3, 0)))  # (B, 3C, T) causal conv
        # SiLU and the L2 norms on a contiguous (B, T, 3H, D) copy, all heads of q, k (and v) in
        # one call: on the strided view both ran at about half speed (7% of a cpu-s step)
        y = F.silu(qkv.transpose(1, 2).contiguous()).view(b, t, 3 * h, self.d_mem)
        if self.normalized:  # [OURS] unit values too: the residual M(k) - v stays O(1) at any width
            y = F.normalize(y, dim=-1)
        else:
            y = torch.cat((F.normalize(y[:, :, : 2 * h], dim=-1), y[:, :, 2 * h :]), dim=2)
        q, k, v = y.transpose(1, 2).split(h, dim=1)  # (B, H, T, D) each
        gates = self.w_gates(x).to(torch.promote_types(x.dtype, torch.float32))  # >= fp32; float64 stays
        g_theta, g_eta, g_alpha = gates.transpose(1, 2).split(self.n_heads, dim=1)  # (B, H, T)
        theta = self.theta_max * torch.sigmoid(g_theta)
        log_eta, log_keep = F.logsigmoid(g_eta), F.logsigmoid(-g_alpha)
        args = (q, k, v, theta, log_eta, log_keep, self.a2, self.a1, self.chunk, self.max_grad_norm, self.normalized)
        m, norms = run_scan(memory_scan, *args, recompute=self.recompute)  # (B, H, T, D)
        if self.training and norms is not None:
            count_clipped(self.clip_stats, norms, self.max_grad_norm)
        return merge_heads(m.to(x.dtype))  # (B, T, C)


def gate_resampling(heads: int, groups: int) -> torch.Tensor:
    """(heads, groups) float64 matrix R averaging `groups` equal groups onto `heads` equal
    groups: R[i, j] = heads * |[i/heads, (i+1)/heads) ∩ [j/groups, (j+1)/groups)|, so every row
    sums to 1 and R is the identity when heads == groups."""
    r = torch.zeros(heads, groups, dtype=torch.float64)
    for i in range(heads):
        for j in range(groups):
            # overlap in units of 1 / (heads * groups): exact integers
            overlap = min((i + 1) * groups, (j + 1) * heads) - max(i * groups, j * heads)
            if overlap > 0:
                r[i, j] = overlap / groups
    return r


class Block(nn.Module):
    gate_map: torch.Tensor | None  # MAG with H_l != n_heads: the fixed gate resampling (a buffer)

    def __init__(self, cfg: ModelConfig, layer_idx: int) -> None:
        super().__init__()
        d, o = cfg.d_model, TitansOptions.of(cfg)
        self.n_p, self.window = o.n_persistent, attention_window(cfg)
        self.heads = HeadShape(cfg, layer_idx)
        self.mag = o.titans_variant == "mag"
        self.init_std = cfg.init_std
        self.attn_norm = RMSNorm(d, cfg.norm_eps)
        self.persistent = nn.Parameter(torch.empty(o.n_persistent, d))
        self.w_qkv = nn.Linear(d, self.heads.qkv_width, bias=False)
        self.memory = NeuralMemory(cfg)
        self.m_norm = RMSNorm(d, cfg.norm_eps)
        self.y_norm = RMSNorm(self.heads.width, cfg.norm_eps) if self.mag else None
        self.n_groups = cfg.n_heads  # the memory read's channels as n_heads groups of D
        resample = self.mag and self.heads.heads != cfg.n_heads
        gate_map = gate_resampling(self.heads.heads, cfg.n_heads).to(torch.get_default_dtype()) if resample else None
        self.register_buffer("gate_map", gate_map, persistent=False)
        self.w_o = nn.Linear(self.heads.width, d, bias=False)
        self.w_o.RESIDUAL_OUT = True  # type: ignore[assignment]
        self.mlp_norm = RMSNorm(d, cfg.norm_eps)
        self.mlp = SwiGLU(d, cfg.mlp_widths[layer_idx])

    def reset_extra_parameters(self) -> None:
        nn.init.normal_(self.persistent, std=self.init_std)

    def attend(self, x: torch.Tensor, rope: Rope) -> torch.Tensor:
        q, k, v = self.heads.split(self.w_qkv(x))  # (B, H, T~, D) each
        return merge_heads(causal_attention(apply_rope(q, rope), apply_rope(k, rope), v, self.window, self.n_p))

    def gate(self, m: torch.Tensor) -> torch.Tensor:
        """σ(RMSNorm(m)) (B, T~, C), resampled to the attention's H_l D channels (MAG)."""
        g = self.m_norm(m)  # (B, T~, C)
        if self.gate_map is not None:
            b, t, _ = g.shape
            grouped = g.view(b, t, self.n_groups, self.heads.head_dim)  # (B, T~, n, D)
            g = torch.einsum("btjd,ij->btid", grouped, self.gate_map.to(g.dtype)).reshape(b, t, self.heads.width)
        return torch.sigmoid(g)  # (B, T~, H D)

    def forward(self, h: torch.Tensor, rope: Rope) -> torch.Tensor:
        x = self.attn_norm(h)  # (B, T, C)
        p = self.persistent.to(x.dtype).unsqueeze(0).expand(x.shape[0], -1, -1)  # (B, N_p, C)
        xt = torch.cat((p, x), dim=1)  # (B, T~, C), T~ = N_p + T
        m = self.memory(xt)  # (B, T~, C)
        if self.y_norm is not None:  # MAG: attention gated by the memory
            y = self.attend(xt, rope)  # (B, T~, H D)
            o = self.y_norm(y) * self.gate(m)  # (B, T~, H D)
        else:  # MAL: memory as a layer feeding attention
            o = self.attend(self.m_norm(m), rope)  # (B, T~, H D)
        h = h + self.w_o(o[:, self.n_p :])  # (B, T, C)
        return h + self.mlp(self.mlp_norm(h))  # (B, T, C)


class Titans(LanguageModel):
    block_cls = Block

    @staticmethod
    def extra_positions(cfg: ModelConfig) -> int:
        return TitansOptions.of(cfg).n_persistent
