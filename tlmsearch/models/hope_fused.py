"""Hope's fast CMS level scan as one autograd node with a hand-written backward.

`hope_attention.fast_swiglu_scan` is the readable form (every per-chunk op records an autograd
node); `FastSwiGLUScan` computes the same function up to rounding with one node, and its
backward walks the chunks in reverse with the analytic derivatives of each step.
`fast_swiglu_scan` uses it for float32 and float64 outside autocast; bf16 and autocast keep the
autograd form. `tests/unit/models/test_fused_scans.py` checks values and every gradient
against the autograd form in float64.

Per chunk (weights Wgu = [Wg | Wu] (C, 2F), Wd (F, C); z = [u; k]; step size lr):

    [gate | up] = z Wgu, hid = silu(gate) ∘ up, out = hid Wd, r = 2 lr (v - out_k),
    dh = r Wd^T, d = [dh ∘ up_k ∘ silu'(gate_k) | dh ∘ silu(gate_k)],
    per token: sq = |k|² |d|² + |hid_k|² |r|²,
    step = 1 / (1 + sq / (|r|² + ε))                  (normalised; else 1)
    clip = min(1, M lr / sqrt(step² sq + ε))          (clip on; else 1)
    Wd' = Wd + hid_k^T diag(step · clip) r,  Wgu' = Wgu + k^T diag(step · clip) d
"""

from __future__ import annotations

from typing import Any

import torch

EPS = 1e-24  # guards of the normalised step and the clip (on lr²-scaled squares)


def _silu_second(a: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """silu''(a) given s = sigmoid(a)."""
    return s * (1 - s) * (2 + a * (1 - 2 * s))


class FastSwiGLUScan(torch.autograd.Function):
    """(us, ks, vs, k_sq, wgu, wd, lr) -> (reads, squared gradient norms).

    us, ks, vs (B, n, b, C); k_sq (B, n, b) the keys' squared norms; wgu (C, 2F) = [Wg | Wu]
    and wd (F, C) the level's learned weights; lr a scalar tensor. Returns the reads
    (B, n, b, C) and the per-token squared norms of the (normalised) gradients before
    clipping, (B, n - 1, b) (not differentiable; zeros without clipping).
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        us: torch.Tensor,
        ks: torch.Tensor,
        vs: torch.Tensor,
        k_sq: torch.Tensor,
        wgu: torch.Tensor,
        wd: torch.Tensor,
        lr: torch.Tensor,
        max_grad_norm: float,
        normalized: bool,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        bsz, n, b, c = us.shape
        f = wd.shape[0]
        two_lr = 2 * lr
        wgu_c, wd_c = wgu.expand(bsz, c, 2 * f), wd.expand(bsz, f, c)
        outs, sqs, saved = [], [], []
        for i in range(n):
            if i == n - 1:  # the last chunk's step is never read
                u = us[:, i]
                gate, up = (u @ wgu_c).split(f, dim=-1)  # (B, b, F)
                sig = torch.sigmoid(gate)
                act = gate * sig
                hid = act * up
                outs.append(hid @ wd_c)
                saved += [wgu_c, wd_c, gate, up, sig, act, hid]
                break
            z = torch.cat((us[:, i], ks[:, i]), 1)  # (B, 2b, C)
            gate, up = (z @ wgu_c).split(f, dim=-1)  # (B, 2b, F)
            sig = torch.sigmoid(gate)
            act = gate * sig
            hid = act * up
            out = hid @ wd_c  # (B, 2b, C)
            outs.append(out[:, :b])
            vmo = vs[:, i] - out[:, b:]  # (B, b, C)
            r = two_lr * vmo
            dh = r @ wd_c.transpose(1, 2)  # (B, b, F)
            sig_k, act_k, up_k, hid_k = sig[:, b:], act[:, b:], up[:, b:], hid[:, b:]
            sg = sig_k + act_k * (1 - sig_k)  # silu'(gate_k)
            d = torch.cat((dh * up_k * sg, dh * act_k), -1)  # (B, b, 2F)
            ksq, dsq, hsq, rsq = k_sq[:, i], (d * d).sum(-1), (hid_k * hid_k).sum(-1), (r * r).sum(-1)  # (B, b)
            sq0 = ksq * dsq + hsq * rsq
            step = (1 + sq0 / (rsq + EPS)).reciprocal() if normalized else torch.ones_like(rsq)
            sq1 = sq0 * step.pow(2)
            if max_grad_norm > 0:
                sqs.append(sq1 / lr.pow(2))
                clip = (max_grad_norm * lr * torch.rsqrt(sq1 + EPS)).clamp(max=1.0)
            else:
                clip = torch.ones_like(step)
            s = (step * clip).unsqueeze(-1)  # (B, b, 1)
            r_s, d_s = r * s, d * s
            saved += [wgu_c, wd_c, z, gate, up, sig, act, hid, vmo, r, dh, sg, d, dsq, hsq, rsq, sq0, step, sq1, clip]
            wd_c = torch.baddbmm(wd_c, hid_k.transpose(1, 2), r_s)  # (B, F, C)
            wgu_c = torch.baddbmm(wgu_c, ks[:, i].transpose(1, 2), d_s)  # (B, C, 2F)
        ctx.save_for_backward(us, ks, vs, k_sq, lr, *saved)
        ctx.max_grad_norm, ctx.normalized = max_grad_norm, normalized
        sq_all = torch.stack(sqs, 1) if sqs else us.new_zeros(bsz, n - 1, b)
        ctx.mark_non_differentiable(sq_all)
        return torch.stack(outs, 1), sq_all

    @staticmethod
    def backward(ctx: Any, d_out: torch.Tensor, _d_sq: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # type: ignore[override]
        us, ks, vs, k_sq, lr, *saved = ctx.saved_tensors
        max_norm, normalized = ctx.max_grad_norm, ctx.normalized
        bsz, n, b, c = us.shape
        two_lr = 2 * lr
        wgu_c, wd_c, gate, up, sig, act, hid = saved[-7:]
        f = wd_c.shape[1]
        d_us, d_ks, d_vs = torch.zeros_like(us), torch.zeros_like(ks), torch.zeros_like(vs)
        d_ksq = torch.zeros_like(k_sq)
        d_lr = torch.zeros_like(lr)
        # last chunk: out_u = (silu(gate) ∘ up) Wd
        do = d_out[:, n - 1]  # (B, b, C)
        d_wd = hid.transpose(1, 2) @ do  # (B, F, C)
        d_hid = do @ wd_c.transpose(1, 2)  # (B, b, F)
        d_g = torch.cat((d_hid * up * (sig + act * (1 - sig)), d_hid * act), -1)  # (B, b, 2F)
        u = us[:, n - 1]
        d_us[:, n - 1] = d_g @ wgu_c.transpose(1, 2)
        d_wgu = u.transpose(1, 2) @ d_g  # (B, C, 2F)
        per = 20  # tensors saved per updating chunk
        for i in range(n - 2, -1, -1):
            wgu_c, wd_c, z, gate, up, sig, act, hid, vmo, r, dh, sg, d, dsq, hsq, rsq, sq0, step, sq1, clip = saved[
                per * i : per * (i + 1)
            ]
            k = ks[:, i]
            sig_k, act_k, up_k, hid_k, gate_k = sig[:, b:], act[:, b:], up[:, b:], hid[:, b:], gate[:, b:]
            s = step * clip  # (B, b)
            # Wd' = Wd + hid_k^T (s r), Wgu' = Wgu + k^T (s d)
            d_rs = hid_k @ d_wd  # (B, b, C)
            d_ds = k @ d_wgu  # (B, b, 2F)
            d_hid_k = (r * s.unsqueeze(-1)) @ d_wd.transpose(1, 2)  # (B, b, F)
            d_k = (d * s.unsqueeze(-1)) @ d_wgu.transpose(1, 2)  # (B, b, C)
            ds = (r * d_rs).sum(-1) + (d * d_ds).sum(-1)  # (B, b)
            d_r = d_rs * s.unsqueeze(-1)
            d_d = d_ds * s.unsqueeze(-1)
            # s = step · clip through the per-token squares
            ksq = k_sq[:, i]
            d_step = ds * clip
            d_sq0 = torch.zeros_like(ds)
            d_rsq = torch.zeros_like(ds)
            if max_norm > 0:
                clipped = (max_norm * lr * torch.rsqrt(sq1 + EPS)) < 1.0
                inv = torch.rsqrt(sq1 + EPS)
                d_lr = d_lr + torch.where(clipped, ds * step * max_norm * inv, 0.0).sum()
                d_sq1 = torch.where(clipped, -0.5 * ds * step * clip / (sq1 + EPS), 0.0)
                d_step = d_step + d_sq1 * 2 * step * sq0
                d_sq0 = d_sq1 * step.pow(2)
            if normalized:
                den = rsq + EPS
                d_sq0 = d_sq0 - step.pow(2) * d_step / den
                d_rsq = d_rsq + step.pow(2) * d_step * sq0 / den.pow(2)
            d_ksq[:, i] = d_sq0 * dsq
            d_d = d_d + (2 * d_sq0 * ksq).unsqueeze(-1) * d
            d_hid_k = d_hid_k + (2 * d_sq0 * rsq).unsqueeze(-1) * hid_k
            d_r = d_r + (2 * (d_rsq + d_sq0 * hsq)).unsqueeze(-1) * r
            # d = [dh ∘ up_k ∘ sg | dh ∘ act_k]
            dd_gate, dd_up = d_d.split(f, dim=-1)
            t = dd_gate * dh
            d_dh = dd_gate * up_k * sg + dd_up * act_k
            d_up_k = t * sg
            d_gate_k = t * up_k * _silu_second(gate_k, sig_k)
            d_act_k = dd_up * dh
            # dh = r Wd^T
            d_r = torch.baddbmm(d_r, d_dh, wd_c)  # (B, b, C)
            d_wd = torch.baddbmm(d_wd, d_dh.transpose(1, 2), r)
            # r = 2 lr (v - out_k)
            d_lr = d_lr + 2 * (d_r * vmo).sum()
            d_vs[:, i] = two_lr * d_r
            dout = torch.cat((d_out[:, i], -two_lr * d_r), 1)  # (B, 2b, C)
            # out = hid Wd, hid = act ∘ up, act = silu(gate)
            d_wd = torch.baddbmm(d_wd, hid.transpose(1, 2), dout)
            d_hid = dout @ wd_c.transpose(1, 2)  # (B, 2b, F)
            d_hid[:, b:] += d_hid_k
            d_act = d_hid * up
            d_act[:, b:] += d_act_k
            d_up = d_hid * act
            d_up[:, b:] += d_up_k
            d_gate = d_act * (sig + act * (1 - sig))
            d_gate[:, b:] += d_gate_k
            d_g = torch.cat((d_gate, d_up), -1)  # (B, 2b, 2F)
            dz = d_g @ wgu_c.transpose(1, 2)  # (B, 2b, C)
            d_wgu = torch.baddbmm(d_wgu, z.transpose(1, 2), d_g)
            d_us[:, i] = dz[:, :b]
            d_ks[:, i] = dz[:, b:] + d_k
        return d_us, d_ks, d_vs, d_ksq, d_wgu.sum(0), d_wd.sum(0), d_lr, None, None
