"""Training throughput of each family relative to the Transformer, measured side by side.

    python bench/bench_models.py                       # cpu-s, batch 4, 5 repeats, 1 thread
    python bench/bench_models.py --preset tiny --repeats 3 --steps 2
    python bench/bench_models.py --scans both          # Titans/Hope fused scans beside their autograd form

Each repeat times `--steps` training steps (forward, backward, AdamW) of every family in turn
(interleaved, order rotated per repeat) so that load from other processes hits all families
alike; the report is each family's median tokens/s and its ratio to the Transformer's, by
wall time and by this process's CPU time (the latter is steadier on a shared, oversubscribed
machine; with one thread the two agree on an idle one).
Goals (issue 3): Titans >= 0.3x, Hope-attention >= 0.4x, Gated Attention >= 0.9x.
Goal of issue 14: Titans and Hope-attention >= 0.5x (not met yet; see bench/README.md).
`--scans both` adds "titans/autograd" and "hope_attention/autograd" rows: the same models with
their scans in the autograd form (the form before the fused scans), interleaved with the rest.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import torch
import torch.nn.functional as F

from tlmsearch.config import ARCHITECTURE_NAMES
from tlmsearch.models import build_model, count_params, flops_per_token
from tlmsearch.models.common import autograd_scans
from tlmsearch.presets import preset


def train_step(model: torch.nn.Module, opt: torch.optim.Optimizer, idx: torch.Tensor, fused: bool = True) -> None:
    with contextlib.nullcontext() if fused else autograd_scans():
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), idx[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cpu-s")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per family per repeat")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--archs", nargs="*", default=list(ARCHITECTURE_NAMES))
    parser.add_argument(
        "--scans", choices=("fused", "both"), default="fused", help="both: also time the autograd-form scans"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    p = preset(args.preset)
    widths = None
    try:
        from tlmsearch.profiles import profile

        widths = profile("cosine", p.budget(), start=1.5, end=0.5)
    except ImportError:  # profiles not available: uniform widths
        pass
    archs = ["transformer"] + [a for a in args.archs if a != "transformer"]
    if args.scans == "both":
        archs += [f"{a}/autograd" for a in archs if a in ("titans", "hope_attention")]
    models, opts = {}, {}
    idx = torch.randint(0, p.vocab_size, (args.batch, p.seq_len + 1), generator=torch.Generator().manual_seed(0))
    for arch in archs:
        cfg = p.model_config(arch.split("/")[0], widths)
        models[arch] = build_model(cfg, seed=0)
        opts[arch] = torch.optim.AdamW(models[arch].parameters(), lr=1e-4)
        train_step(models[arch], opts[arch], idx, "/" not in arch)  # warm-up
    tokens = args.batch * p.seq_len * args.steps
    rates: dict[str, list[float]] = {a: [] for a in archs}
    cpu_rates: dict[str, list[float]] = {a: [] for a in archs}
    for r in range(args.repeats):
        order = archs[r % len(archs) :] + archs[: r % len(archs)]
        for arch in order:
            start, cpu_start = time.perf_counter(), time.process_time()
            for _ in range(args.steps):
                train_step(models[arch], opts[arch], idx, "/" not in arch)
            rates[arch].append(tokens / (time.perf_counter() - start))
            cpu_rates[arch].append(tokens / (time.process_time() - cpu_start))
    base = statistics.median(rates["transformer"])
    cpu_base = statistics.median(cpu_rates["transformer"])
    print(f"preset {p.name}, batch {args.batch} x seq {p.seq_len}, {args.repeats} repeats x {args.steps} steps, "
          f"{args.threads} thread(s), cosine 1.5->0.5 widths {widths}")  # fmt: skip
    print(
        f"{'family':24s} {'params':>10s} {'GFLOP/tok':>10s} {'tokens/s':>9s} {'ratio':>6s} "
        f"{'cpu-tok/s':>9s} {'ratio':>6s}  (per-repeat wall ratios)"
    )
    for arch in archs:
        cfg = models[arch].cfg  # type: ignore[union-attr]
        med, cpu_med = statistics.median(rates[arch]), statistics.median(cpu_rates[arch])
        per = " ".join(f"{a / b:.2f}" for a, b in zip(rates[arch], rates["transformer"], strict=True))
        print(
            f"{arch:24s} {count_params(cfg).total:10d} {flops_per_token(cfg) / 1e9:10.4f} "
            f"{med:9.0f} {med / base:6.2f} {cpu_med:9.0f} {cpu_med / cpu_base:6.2f}  ({per})"
        )


if __name__ == "__main__":
    main()
