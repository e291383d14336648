"""Would torch.compile of Titans' per-chunk memory update pay on CPU? One layer's scan at the
cpu-s shape, forward and backward, three forms interleaved:

    python bench/bench_scan_compile.py --batch 16          # the trainer's batch at cpu-s
    python bench/bench_scan_compile.py --batch 4           # bench_models.py's batch

- `fused`: `titans.memory_scan` as the model runs it (one autograd node, hand-written backward);
- `eager-body`: the autograd form with its per-chunk body as a function, eager;
- `compiled`: that function under `torch.compile(dynamic=False)` (inductor; the chunk loop
  stays in Python, each chunk's forward and backward are compiled graphs).

The compiled form is first checked equal to the fused scan (values and every input's gradient,
float32 tolerance); then each form's CPU time per scan (median of `--repeats`, interleaved) and
the compile time (wall, first call) are printed. Measurement only: the model keeps the fused
scan (bench/README.md, "Fused scans").
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from tlmsearch.models.common import silu_grad
from tlmsearch.models.titans import chunk_coefficients, memory_scan

Body = Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]


def chunk_body(
    z: torch.Tensor,
    v: torch.Tensor,
    k: torch.Tensor,
    k_sq: torch.Tensor,
    coef: torch.Tensor,
    mix: torch.Tensor,
    x2: torch.Tensor,
    x1: torch.Tensor,
    d: int,
    f: int,
    max_norm: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One updating chunk of `titans.memory_scan`'s autograd form (normalised step, clip on):
    reads of the chunk's queries, the next state [W; S] and the squared gradient norms."""
    bh = z.shape[0]
    w2, w1 = x2[:, 0].view(bh, d, f), x1[:, 0].view(bh, f, d)
    a = z @ w2
    act = F.silu(a)
    out_q, out_k = torch.baddbmm(z, act, w1).chunk(2, dim=1)
    act_k, a_k = act.chunk(2, dim=1)[1], a.chunk(2, dim=1)[1]
    r = out_k - v
    g = (r @ w1.transpose(1, 2)) * silu_grad(a_k)
    curv = k_sq * g.pow(2).sum(-1) / (r.pow(2).sum(-1) + 1e-12) + act_k.pow(2).sum(-1)
    step = (1 + curv).reciprocal().unsqueeze(-1)
    g, r = g * step, r * step
    sq = 4 * (k_sq * g.pow(2).sum(-1) + act_k.pow(2).sum(-1) * r.pow(2).sum(-1))
    clip = (max_norm * torch.rsqrt(sq + 1e-12)).clamp(max=1.0).unsqueeze(-1)
    g, r = g * clip, r * clip
    upd2 = k.transpose(1, 2).unsqueeze(1) @ (g.unsqueeze(1) * coef)
    upd1 = act_k.transpose(1, 2).unsqueeze(1) @ (r.unsqueeze(1) * coef)
    x2 = torch.baddbmm(upd2.reshape(bh, 2, -1), mix, x2)
    x1 = torch.baddbmm(upd1.reshape(bh, 2, -1), mix, x1)
    return out_q, x2, x1, sq.detach()


def scan_with_body(
    inputs: tuple[torch.Tensor, ...], chunk: int, max_norm: float, body: Body
) -> tuple[torch.Tensor, torch.Tensor]:
    """`memory_scan` (T a multiple of `chunk`) with each updating chunk computed by `body`."""
    q, k, v, theta, log_eta, log_keep, a2, a1 = inputs
    bsz, n_h, t, d = q.shape
    f, bh, n = a2.shape[-1], bsz * n_h, t // chunk
    qs, ks, vs = (z.reshape(bh, n, chunk, d) for z in (q, k, v))
    zs = torch.cat((qs, ks), dim=2)
    keep_w, carry_w, coef_w, keep_s, coef_s = chunk_coefficients(
        *(z.reshape(bh, n, chunk) for z in (theta, log_eta, log_keep))
    )
    coefs = -2 * torch.stack((coef_w, coef_s), dim=2)[..., None]
    zero = torch.zeros_like(keep_w)
    mix = torch.stack((torch.stack((keep_w, carry_w), -1), torch.stack((zero, keep_s), -1)), -2)
    x2, x1 = (torch.stack((w, torch.zeros_like(w)), 1) for w in (a2, a1))
    x2, x1 = (x.unsqueeze(0).expand(bsz, -1, -1, -1, -1).reshape(bh, 2, -1) for x in (x2, x1))
    z_c, v_c, k_c, ksq_c, coef_c, mix_c = (x.unbind(1) for x in (zs, vs, ks, ks.pow(2).sum(-1), coefs, mix))
    outs, norms = [], []
    for c in range(n - 1):
        out, x2, x1, sq = body(z_c[c], v_c[c], k_c[c], ksq_c[c], coef_c[c], mix_c[c], x2, x1, d, f, max_norm)
        outs.append(out)
        norms.append(sq)
    w2, w1 = x2[:, 0].view(bh, d, f), x1[:, 0].view(bh, f, d)
    q_last = z_c[n - 1][:, :chunk]
    outs.append(torch.baddbmm(q_last, F.silu(q_last @ w2), w1))
    return torch.cat(outs, 1).reshape(bsz, n_h, t, d), torch.cat(norms, 1).sqrt()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-norm", type=float, default=2.0, help="the safety clip (engaged or not, same cost)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    heads, t, d, f, chunk = 4, 272, 32, 64, 16  # cpu-s: 4 memory heads of 32, T 256 + 4 persistent -> 17 chunks
    shape = (args.batch, heads, t)
    q, k, v = (F.normalize(torch.randn(*shape, d), dim=-1).requires_grad_() for _ in range(3))
    theta = torch.full(shape, 0.015, requires_grad=True)  # θ_max / 2, the gates' initial values
    log_eta = torch.full(shape, -0.105, requires_grad=True)  # η ≈ 0.9
    log_keep = torch.full(shape, -0.01, requires_grad=True)  # α ≈ 0.01
    a2 = (torch.randn(heads, d, f) / d).requires_grad_()
    a1 = (0.02 * torch.randn(heads, f, d)).requires_grad_()
    inputs = (q, k, v, theta, log_eta, log_keep, a2, a1)
    weight = torch.randn(*shape, d)
    compiled: Body = torch.compile(chunk_body, dynamic=False)  # type: ignore[assignment]

    def run(form: str) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        if form == "fused":
            m, _ = memory_scan(*inputs, chunk, args.max_norm, True)
        else:
            m, _ = scan_with_body(inputs, chunk, args.max_norm, compiled if form == "compiled" else chunk_body)
        return m, torch.autograd.grad((m * weight).sum(), inputs)

    ref = run("fused")
    start = time.perf_counter()
    got = run("compiled")
    print(f"compile (first call, forward and backward graphs): {time.perf_counter() - start:.0f} s wall")
    torch.testing.assert_close(got[0], ref[0], atol=1e-5, rtol=1e-4)
    for a, b in zip(got[1], ref[1], strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-3)
    print("compiled form equals the fused scan (values and all input gradients, float32 tolerance)")
    forms = ("fused", "eager-body", "compiled")
    times: dict[str, list[float]] = {form: [] for form in forms}
    for _ in range(args.repeats):
        for form in forms:
            start = time.process_time()
            run(form)
            times[form].append(1e3 * (time.process_time() - start))
    base = statistics.median(times["fused"])
    print(f"batch {args.batch}, one layer's scan fwd+bwd, CPU ms per repeat (median; vs fused)")
    for form in forms:
        med = statistics.median(times[form])
        print(f"{form:11s} {med:7.1f} ms  {med / base:5.2f}x  ({' '.join(f'{x:.0f}' for x in times[form])})")


if __name__ == "__main__":
    main()
