"""Titans' chunked memory scan as one autograd node with a hand-written backward.

`titans.memory_scan` is the readable form: every per-chunk op records an autograd node, and at
the cpu-s shape (16 chunks of 16 tokens, 4 heads of 32 channels) the time goes to the
per-op overhead of ~55 small ops per chunk and their backward nodes, not to arithmetic.
`MemoryScan` computes the same function (up to rounding: 1e-15 in float64) but records one
node; its backward walks the chunks in reverse with the analytic derivatives of each step:
fewer ops and no autograd bookkeeping per op. Measured gain at cpu-s, 1 thread: about 7% of a
Titans training step (bench/README.md); the rest of the time is the small matmuls themselves.
`titans.memory_scan` uses it for float32 and float64 outside autocast; bf16 and autocast keep
the autograd form. `tests/unit/models/test_fused_scans.py` checks values and every gradient
against the autograd form in float64.

Per chunk (weights W2 (D, F), W1 (F, D), momentum S2, S1; z = [q; k]; chunk of b tokens):

    a = z W2, σ = sigmoid(a), act = a σ, out = z + act W1, r = out_k - v,
    p = r W1^T, g = p ∘ silu'(a_k), per token: A = |k|²|g|², B = |act_k|²|r|²,
    step = 1 / (1 + A / (|r|² + ε) + |act_k|²)    (normalised; else 1)
    clip = min(1, M / sqrt(4 step² (A + B) + ε))   (clip on; else 1)
    e_j = coef_j · step · clip   (j = W, S)
    [W; S]' = mix [W; S] + [k^T diag(e_W) g, act_k^T diag(e_W) r ; the same with e_S]
"""

from __future__ import annotations

from typing import Any

import torch

EPS_CURV = 1e-12  # the normalised step's guard on |r|²
EPS_CLIP = 1e-12  # the clip's guard on the squared norm


def _silu_parts(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    s = torch.sigmoid(a)
    return s, a * s  # sigmoid(a), silu(a)


class MemoryScan(torch.autograd.Function):
    """(zs, vs, k_sq, coefs, mix, w2, w1) -> (reads, squared gradient norms).

    zs (BH, n, 2b, D): each chunk's queries then keys; vs (BH, n, b, D); k_sq (BH, n, b) the
    keys' squared norms; coefs (BH, n, 2, b) the token coefficients of the W and S updates
    (the factor -2 included); mix (BH, n, 2, 2) the per-chunk state mix; w2 (BH, D, F), w1
    (BH, F, D) the initial weights. Returns reads (BH, n, b, D) and the per-token squared
    norms of the normalised gradients before clipping, (BH, n - 1, b) (not differentiable;
    zeros when `max_grad_norm` is 0).
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        zs: torch.Tensor,
        vs: torch.Tensor,
        k_sq: torch.Tensor,
        coefs: torch.Tensor,
        mix: torch.Tensor,
        w2: torch.Tensor,
        w1: torch.Tensor,
        max_grad_norm: float,
        normalized: bool,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        bh, n, b2, d = zs.shape
        b, f = b2 // 2, w2.shape[-1]
        x2 = torch.stack((w2, torch.zeros_like(w2)), 1).view(bh, 2, d * f)  # [W2; S2]
        x1 = torch.stack((w1, torch.zeros_like(w1)), 1).view(bh, 2, f * d)  # [W1; S1]
        outs, sqs, saved = [], [], []
        for c in range(n):
            z, w2c, w1c = zs[:, c], x2[:, 0].view(bh, d, f), x1[:, 0].view(bh, f, d)
            if c == n - 1:  # the last chunk's update is never read
                q = z[:, :b]
                sig, act = _silu_parts(q @ w2c)  # (BH, b, F)
                outs.append(torch.baddbmm(q, act, w1c))
                saved += [x2, x1, sig, act]
                break
            a = z @ w2c  # (BH, 2b, F)
            sig, act = _silu_parts(a)
            out = torch.baddbmm(z, act, w1c)  # (BH, 2b, D)
            outs.append(out[:, :b])
            k, sig_k, act_k = z[:, b:], sig[:, b:], act[:, b:]
            r = out[:, b:] - vs[:, c]  # (BH, b, D)
            p = r @ w1c.transpose(1, 2)  # (BH, b, F)
            sg = sig_k + act_k * (1 - sig_k)  # silu'(a_k)
            g = p * sg  # (BH, b, F)
            ksq, gsq, asq, rsq = k_sq[:, c], (g * g).sum(-1), (act_k * act_k).sum(-1), (r * r).sum(-1)  # (BH, b)
            big_a, big_b = ksq * gsq, asq * rsq
            step = (1 + big_a / (rsq + EPS_CURV) + asq).reciprocal() if normalized else torch.ones_like(rsq)
            if max_grad_norm > 0:
                sq = 4 * step.pow(2) * (big_a + big_b)  # |u_t|² after the normalised step
                clip = (max_grad_norm * torch.rsqrt(sq + EPS_CLIP)).clamp(max=1.0)
                sqs.append(sq)
            else:
                clip = torch.ones_like(step)
            s = step * clip  # (BH, b)
            e = coefs[:, c] * s.unsqueeze(1)  # (BH, 2, b)
            eg, er = g.unsqueeze(1) * e.unsqueeze(-1), r.unsqueeze(1) * e.unsqueeze(-1)  # (BH, 2, b, F|D)
            upd2 = k.transpose(1, 2).unsqueeze(1) @ eg  # (BH, 2, D, F)
            upd1 = act_k.transpose(1, 2).unsqueeze(1) @ er  # (BH, 2, F, D)
            saved += [x2, x1, a, sig, act, r, p, sg, g, step, clip, s, e, eg, er, gsq, asq, rsq]
            x2 = torch.baddbmm(upd2.view(bh, 2, d * f), mix[:, c], x2)
            x1 = torch.baddbmm(upd1.view(bh, 2, f * d), mix[:, c], x1)
        ctx.save_for_backward(zs, k_sq, coefs, mix, *saved)
        ctx.max_grad_norm, ctx.normalized = max_grad_norm, normalized
        sq_all = torch.stack(sqs, 1) if sqs else zs.new_zeros(bh, n - 1, b)
        ctx.mark_non_differentiable(sq_all)
        return torch.stack(outs, 1), sq_all  # (BH, n, b, D), (BH, n-1, b)

    @staticmethod
    def backward(ctx: Any, d_out: torch.Tensor, _d_sq: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # type: ignore[override]
        zs, k_sq, coefs, mix, *saved = ctx.saved_tensors
        max_norm, normalized = ctx.max_grad_norm, ctx.normalized
        bh, n, b2, d = zs.shape
        b = b2 // 2
        x2, x1, sig, act = saved[-4:]
        f = act.shape[-1]
        w2c, w1c = x2[:, 0].view(bh, d, f), x1[:, 0].view(bh, f, d)
        # last chunk: out_q = q + silu(q W2) W1
        dq = d_out[:, n - 1]  # (BH, b, D)
        q = zs[:, n - 1, :b]
        da = (dq @ w1c.transpose(1, 2)) * (sig + act * (1 - sig))  # (BH, b, F)
        d_zs, d_vs = torch.zeros_like(zs), zs.new_zeros(bh, n, b, d)
        d_ksq, d_coefs, d_mix = torch.zeros_like(k_sq), torch.zeros_like(coefs), torch.zeros_like(mix)
        d_zs[:, n - 1, :b] = torch.baddbmm(dq, da, w2c.transpose(1, 2))
        dx2 = torch.stack((q.transpose(1, 2) @ da, torch.zeros_like(w2c)), 1).view(bh, 2, d * f)
        dx1 = torch.stack((act.transpose(1, 2) @ dq, torch.zeros_like(w1c)), 1).view(bh, 2, f * d)
        per = 18  # tensors saved per updating chunk
        for c in range(n - 2, -1, -1):
            x2, x1, a, sig, act, r, p, sg, g, step, clip, s, e, eg, er, gsq, asq, rsq = saved[per * c : per * (c + 1)]
            w2c, w1c = x2[:, 0].view(bh, d, f), x1[:, 0].view(bh, f, d)
            z = zs[:, c]
            k, act_k = z[:, b:], act[:, b:]
            # state mix: X' = mix X + U
            d_mix[:, c] = dx2 @ x2.transpose(1, 2) + dx1 @ x1.transpose(1, 2)  # (BH, 2, 2)
            du2, du1 = dx2.view(bh, 2, d, f), dx1.view(bh, 2, f, d)
            dx2, dx1 = mix[:, c].transpose(1, 2) @ dx2, mix[:, c].transpose(1, 2) @ dx1
            # U2_j = k^T (e_j g), U1_j = act_k^T (e_j r)
            d_eg = k.unsqueeze(1) @ du2  # (BH, 2, b, F)
            d_er = act_k.unsqueeze(1) @ du1  # (BH, 2, b, D)
            dk = (eg @ du2.transpose(2, 3)).sum(1)  # (BH, b, D)
            dact_k = (er @ du1.transpose(2, 3)).sum(1)  # (BH, b, F)
            e_ = e.unsqueeze(-1)
            dg = (d_eg * e_).sum(1)  # (BH, b, F)
            dr = (d_er * e_).sum(1)  # (BH, b, D)
            de = (d_eg * g.unsqueeze(1)).sum(-1) + (d_er * r.unsqueeze(1)).sum(-1)  # (BH, 2, b)
            d_coefs[:, c] = de * s.unsqueeze(1)
            ds = (de * coefs[:, c]).sum(1)  # (BH, b)
            # s = step · clip through the per-token squared norms
            ksq = k_sq[:, c]
            big_a, big_b = ksq * gsq, asq * rsq
            d_step = ds * clip
            d_a = torch.zeros_like(ds)
            d_rsq = torch.zeros_like(ds)
            d_asq = torch.zeros_like(ds)
            if max_norm > 0:
                sq = 4 * step.pow(2) * (big_a + big_b)
                clipped = (max_norm * torch.rsqrt(sq + EPS_CLIP)) < 1.0
                d_sq = torch.where(clipped, -0.5 * ds * step * clip / (sq + EPS_CLIP), 0.0)
                d_step = d_step + d_sq * 8 * step * (big_a + big_b)
                d_a = d_sq * 4 * step.pow(2)
                d_rsq = d_a * asq
                d_asq = d_a * rsq
            if normalized:
                d_curv = -step.pow(2) * d_step
                den = rsq + EPS_CURV
                d_a = d_a + d_curv / den
                d_rsq = d_rsq - d_curv * big_a / den.pow(2)
                d_asq = d_asq + d_curv
            d_ksq[:, c] = d_a * gsq
            dg = dg + (2 * d_a * ksq).unsqueeze(-1) * g
            dr = dr + (2 * d_rsq).unsqueeze(-1) * r
            dact_k = dact_k + (2 * d_asq).unsqueeze(-1) * act_k
            # g = p ∘ silu'(a_k), p = r W1^T
            dp = dg * sg
            dsg = dg * p
            dr = torch.baddbmm(dr, dp, w1c)  # (BH, b, D)
            dw1 = dp.transpose(1, 2) @ r  # (BH, F, D)
            # the read and the inner-loss input: out = z + act W1, r = out_k - v
            d_vs[:, c] = -dr
            dout = torch.cat((d_out[:, c], dr), 1)  # (BH, 2b, D)
            dact = dout @ w1c.transpose(1, 2)  # (BH, 2b, F)
            dact[:, b:] += dact_k
            dw1 = torch.baddbmm(dw1, act.transpose(1, 2), dout)
            da = dact * (sig + act * (1 - sig))  # silu'(a)
            da[:, b:] += dsg * _silu_second(a[:, b:], sig[:, b:])
            dz = torch.baddbmm(dout, da, w2c.transpose(1, 2))  # (BH, 2b, D)
            dz[:, b:] += dk
            d_zs[:, c] = dz
            dx2[:, 0] += (z.transpose(1, 2) @ da).view(bh, d * f)
            dx1[:, 0] += dw1.view(bh, f * d)
        return d_zs, d_vs, d_ksq, d_coefs, d_mix, dx2[:, 0].view(bh, d, f), dx1[:, 0].view(bh, f, d), None, None


def _silu_second(a: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """silu''(a) given s = sigmoid(a)."""
    return s * (1 - s) * (2 + a * (1 - 2 * s))
