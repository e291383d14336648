"""GPU figures: each family's training throughput and MFU, compile on/off, and how well
fractional GPUs pack several trials onto one device.

    python -m bench.bench_gpu families --preset 170m --steps 10      # bf16 autocast, eager + compile
    python -m bench.bench_gpu packing RUN_ALONE RUN_PACKED             # two finished searches

`families` trains each architecture with the trainer's own optimizer and loss on random
tokens (throughput does not depend on the text): a few warm-up steps (compilation happens
there), then timed steps between CUDA synchronisations. MFU is reported against the
device's measured bf16 matmul peak (`tlmsearch.training.hardware.matmul_peak`) and against the
vendor's dense bf16 figure for the named GPU. Families are interleaved per repeat.

`packing` reads two search run directories trained with the same settings, one with
`--gpus-per-trial 1` (trials one after another) and one with a fraction (several trials at
once on the device), and prints the aggregate tokens/s of each (all tokens trained over the
span from the first trial's start to the last trial's end) and their ratio: the packing
efficiency, the speed-up bought by sharing the GPU.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# dense bf16 tensor-core peaks from the vendors' datasheets (SXM parts), FLOP/s
VENDOR_BF16_PEAK = {"H100": 989e12, "H200": 989e12, "A100": 312e12}


def vendor_peak(name: str) -> float | None:
    for key, value in VENDOR_BF16_PEAK.items():
        if key in name:
            return value
    return None


def time_family(arch: str, preset_name: str, *, batch: int, steps: int, warmup: int, compile_: bool,
                vocab: int, device: str) -> dict[str, Any]:  # fmt: skip
    """Median-free single measurement: tokens/s of `steps` timed training steps after `warmup`."""
    import torch
    import torch.nn.functional as F

    from tlmsearch.configs.presets import preset
    from tlmsearch.core.base import TrainConfig
    from tlmsearch.models import build_model, flops_per_token
    from tlmsearch.training.trainer import make_optimizer

    model_cfg = preset(preset_name).model_config(arch, vocab_size=vocab)
    dev = torch.device(device)
    cfg = TrainConfig(steps=steps + warmup, batch_size=batch, dtype="bfloat16", compile=compile_)
    model = build_model(model_cfg, seed=0).to(dev)
    opt = make_optimizer(model, cfg, dev)
    fwd = torch.compile(model) if compile_ else model
    T, V = model_cfg.seq_len, model_cfg.vocab_size
    gen = torch.Generator(device=dev).manual_seed(0)
    data = torch.randint(0, V, (4, batch, T + 1), generator=gen, device=dev)
    on_cuda = dev.type == "cuda"
    if on_cuda:
        torch.cuda.reset_peak_memory_stats(dev)

    def step(i: int) -> torch.Tensor:
        x, y = data[i % 4, :, :-1], data[i % 4, :, 1:]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = fwd(x)
        loss = F.cross_entropy(logits.float().reshape(-1, V), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    t0 = time.perf_counter()
    for i in range(warmup):
        step(i)
    if on_cuda:
        torch.cuda.synchronize(dev)
    t1 = time.perf_counter()
    for i in range(steps):
        loss = step(i)
    if on_cuda:
        torch.cuda.synchronize(dev)
    t2 = time.perf_counter()
    tok_s = steps * batch * T / (t2 - t1)
    return {
        "arch": arch,
        "compile": compile_,
        "tokens_per_s": tok_s,
        "flops_per_token": flops_per_token(model_cfg),
        "warmup_s": t1 - t0,
        "loss": float(loss),
        "peak_mem_gib": torch.cuda.max_memory_allocated(dev) / 2**30 if on_cuda else float("nan"),
    }


def families(args: argparse.Namespace) -> None:
    import torch

    from tlmsearch.core.architectures import ARCHITECTURE_NAMES
    from tlmsearch.training.hardware import device_name, matmul_peak, measure_matmul_peak

    dev = torch.device(args.device)
    name = device_name(dev)
    # on a CPU (device_check.sh SMALL=1) a 2048 bf16 matmul takes minutes: a 256 one checks the path
    peak = (
        matmul_peak(dev, "bfloat16", refresh=True)
        if dev.type == "cuda"
        else measure_matmul_peak(dev, "bfloat16", size=256)
    )
    vpeak = vendor_peak(name)
    archs = args.archs or list(ARCHITECTURE_NAMES)
    modes = [False, True] if args.compile else [False]
    compiled = set(args.compile_archs or archs)
    print(
        f"{name}: torch {torch.__version__}, preset {args.preset}, batch {args.batch}, vocab {args.vocab}, "
        f"{args.steps} timed steps after {args.warmup} warm-up, bf16 autocast; measured bf16 matmul peak "
        f"{peak / 1e12:.0f} TFLOP/s" + (f", vendor dense bf16 {vpeak / 1e12:.0f}" if vpeak else ""),
        flush=True,
    )
    rows: dict[tuple[str, bool], list[dict[str, Any]]] = {}
    for _ in range(args.repeats):
        for arch in archs:
            for mode in modes:
                if mode and arch not in compiled:
                    continue
                if (arch, mode) in rows and rows[(arch, mode)][-1].get("error"):
                    continue
                try:
                    r = time_family(arch, args.preset, batch=args.batch, steps=args.steps, warmup=args.warmup,
                                    compile_=mode, vocab=args.vocab, device=args.device)  # fmt: skip
                except Exception as e:  # a failing family must not hide the others' figures
                    r = {"arch": arch, "compile": mode, "error": f"{type(e).__name__}: {e}"[:300]}
                rows.setdefault((arch, mode), []).append(r)
                print(json.dumps(r), flush=True)
    base: dict[bool, float] = {}
    for m in modes:
        ok = [x["tokens_per_s"] for x in rows.get(("transformer", m), []) if "error" not in x]
        if ok:
            base[m] = statistics.median(ok)
    print("\n| family | compile | tokens/s | vs Transformer | MFU (measured peak) | MFU (vendor) | warm-up s | GiB |")
    print("|---|---|---|---|---|---|---|---|")
    for (arch, mode), rs in rows.items():
        ok = [x for x in rs if "error" not in x]
        if not ok:
            print(f"| {arch} | {mode} | error: {rs[-1]['error'][:80]} | | | | | |")
            continue
        tok = statistics.median(x["tokens_per_s"] for x in ok)
        f = ok[0]["flops_per_token"]
        rel = f"{tok / base[mode]:.2f}x" if mode in base else "-"
        mv = f"{100 * tok * f / vpeak:.1f}%" if vpeak else "-"
        print(
            f"| {arch} | {'on' if mode else 'off'} | {tok:,.0f} | {rel} | {100 * tok * f / peak:.1f}% | {mv} | "
            f"{statistics.median(x['warmup_s'] for x in ok):.1f} | {max(x['peak_mem_gib'] for x in ok):.1f} |"
        )


def _span(records: list[dict[str, Any]]) -> tuple[float, float]:
    starts = [dt.datetime.fromisoformat(r["started_at"]) for r in records]
    ends = [dt.datetime.fromisoformat(r["ended_at"]) for r in records]
    tokens = sum(float(r["metrics"].get("tokens", 0.0)) for r in records)
    return tokens, (max(ends) - min(starts)).total_seconds()


def packing(args: argparse.Namespace) -> None:
    out = {}
    for label, run in (("alone", args.alone), ("packed", args.packed)):
        lines = Path(run, "trials.jsonl").read_text().splitlines()
        recs = [json.loads(x) for x in lines if x.strip()]
        recs = [r for r in recs if r.get("status") == "complete"]
        if not recs:
            sys.exit(f"bench_gpu: {run} has no complete trials")
        tokens, span = _span(recs)
        per_trial = statistics.median(float(r["metrics"]["tokens_per_s"]) for r in recs)
        mfu = statistics.median(float(r["metrics"].get("mfu", float("nan"))) for r in recs)
        devices = sorted({json.dumps(r.get("devices")) for r in recs})
        out[label] = tokens / span
        print(
            f"{label:>6}: {len(recs)} trials, {tokens / 1e6:.1f} M tokens in {span:.1f} s = {tokens / span:,.0f} tok/s "
            f"aggregate; per trial median {per_trial:,.0f} tok/s, MFU {100 * mfu:.1f}%; devices {', '.join(devices)}"
        )
    print(f"packing efficiency (aggregate packed / aggregate alone): {out['packed'] / out['alone']:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    f = sub.add_parser("families", help="tokens/s and MFU per family, compile off/on")
    f.add_argument("--preset", default="170m")
    f.add_argument("--archs", nargs="*", default=None)
    f.add_argument("--batch", type=int, default=16)
    f.add_argument("--steps", type=int, default=10)
    f.add_argument("--warmup", type=int, default=3)
    f.add_argument("--repeats", type=int, default=1)
    f.add_argument("--vocab", type=int, default=32000)
    f.add_argument("--device", default="cuda")
    f.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True)
    f.add_argument("--compile-archs", nargs="*", default=None, help="families timed compiled too (default: all)")
    p = sub.add_parser("packing", help="aggregate tokens/s of a packed search against one trial per GPU")
    p.add_argument("alone")
    p.add_argument("packed")
    args = ap.parse_args()
    families(args) if args.what == "families" else packing(args)


if __name__ == "__main__":
    main()
