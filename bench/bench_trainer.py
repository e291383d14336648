"""Trainer overhead: `tlmsearch.train` against a bare hand-written PyTorch loop, side by side.

Both train the same model (same preset, widths, seed, batch, optimizer settings) on the same
byte-level Shakespeare stream; runs are interleaved (ours, bare, ours, bare, ...) so that
machine noise hits both alike. Printed: tokens/s of each (median over repeats), their ratio
(goal >= 0.95), and MFU against this machine's measured matmul peak, for fp32 and bf16.

    python bench/bench_trainer.py                       # cpu-s, 20 steps, 3 repeats, 2 threads
    python bench/bench_trainer.py --preset tiny --steps 50 --repeats 5 --threads 1
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.data import gather, prepare
from tlmsearch.models import build_model, flops_per_token
from tlmsearch.training.hardware import matmul_peak, resolve_device, thread_count
from tlmsearch.training.trainer import make_optimizer, train


def bare_loop(model_cfg: ModelConfig, cfg: TrainConfig, data_cfg: DataConfig) -> float:
    """The loop one would write by hand (nanoGPT style); returns training tokens/s."""
    device = resolve_device(cfg.device)
    data = prepare(data_cfg)
    T, B, V = model_cfg.seq_len, cfg.batch_size, model_cfg.vocab_size
    torch.manual_seed(cfg.seed)
    model = build_model(model_cfg, seed=cfg.seed).to(device)
    opt = make_optimizer(model, cfg, device)  # same AdamW (fused, decay groups) as the trainer
    gen = torch.Generator().manual_seed(cfg.seed)
    starts = torch.randint(0, data.train.shape[0] - T, (cfg.steps, B), generator=gen).numpy()
    use_bf16 = cfg.dtype == "bfloat16"
    t0 = time.perf_counter()
    for step in range(cfg.steps):
        batch = torch.from_numpy(gather(data.train, starts[step], T)).to(device)  # (B, T+1)
        x, y = batch[:, :-1], batch[:, 1:]
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
            logits = model(x)  # (B, T, V)
        loss = F.cross_entropy(logits.float().view(-1, V), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
    loss.item()
    return cfg.steps * B * T / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="cpu-s")
    ap.add_argument("--arch", default="transformer")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--corpus", default="shakespeare")
    args = ap.parse_args()

    model_cfg = preset(args.preset).model_config(args.arch)
    data_cfg = DataConfig(corpus=args.corpus)
    prepare(data_cfg)
    flops = flops_per_token(model_cfg)
    print(
        f"{args.arch} {args.preset}: d {model_cfg.d_model}, {model_cfg.n_layers} layers, seq {model_cfg.seq_len}, "
        f"batch {args.batch_size}, {args.steps} steps x {args.repeats} repeats, {args.threads} threads, "
        f"{flops / 1e6:.1f} MFLOP/token (training)",
        flush=True,
    )
    with thread_count(args.threads):
        for dtype in args.dtypes.split(","):
            cfg = TrainConfig(
                steps=args.steps, batch_size=args.batch_size, eval_interval=args.steps, eval_windows=4,
                warmup_steps=min(5, args.steps), dtype=dtype, threads=args.threads,
            )  # fmt: skip
            device = resolve_device(cfg.device)
            peak = matmul_peak(device, dtype, refresh=True)
            ours, bare = [], []
            for _ in range(args.repeats):
                ours.append(train(model_cfg, cfg, data_cfg).metrics["tokens_per_s"])
                bare.append(bare_loop(model_cfg, cfg, data_cfg))
            o, b = statistics.median(ours), statistics.median(bare)
            print(
                f"{dtype:>9}: tlmsearch.train {o:8,.0f} tok/s (MFU {100 * o * flops / peak:5.1f}%)  "
                f"bare loop {b:8,.0f} tok/s (MFU {100 * b * flops / peak:5.1f}%)  "
                f"ratio {o / b:.3f}  [peak {peak / 1e9:.0f} GFLOP/s measured; "
                f"runs ours {', '.join(f'{v:,.0f}' for v in ours)}; bare {', '.join(f'{v:,.0f}' for v in bare)}]",
                flush=True,
            )


if __name__ == "__main__":
    main()
