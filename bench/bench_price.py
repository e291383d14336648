"""The price model's figures (`tlmsearch.costs.price.CPU_STEPS`): seconds of a CPU training step
of each architecture's uniform profile at the presets tiny, cpu-xs and cpu-s, one thread,
float32, batch 16, beside its analytic training FLOPs and the share of the measured matmul
peak they ran at, and the price model's own figure for the same step beside the measured one.

    python -m bench.bench_price                                  # every preset and architecture
    python -m bench.bench_price --presets tiny --archs transformer --steps 2   # smoke test
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench._common import print_header, table

ARCHS = ("transformer", "gated_attention", "titans", "hope_attention")


def time_step(preset_name: str, arch: str, steps: int) -> dict[str, Any]:
    """Seconds of a training step (`steps` timed after a warm-up one), its FLOPs and shares."""
    from tlmsearch.configs.presets import preset
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.costs.price import REFERENCE_PEAK, cpu_step_model, model_rate
    from tlmsearch.models.counts import flops_per_token
    from tlmsearch.training.hardware import matmul_peak, resolve_device, thread_count
    from tlmsearch.training.trainer import resolve_vocab, train

    data = DataConfig()
    with thread_count(1):
        peak = matmul_peak(resolve_device("cpu"), "float32", data.cache_path())
    model = resolve_vocab(preset(preset_name).model_config(arch), data)
    cfg = TrainConfig(steps=steps + 1, eval_interval=steps + 1, eval_windows=1, warmup_steps=0,
                      checkpoint_interval=0, threads=1, device="cpu")  # fmt: skip
    stamps: list[float] = []
    train(model, cfg, data, progress=lambda step: stamps.append(time.perf_counter()))
    seconds = (stamps[-1] - stamps[0]) / (len(stamps) - 1)
    flops = cfg.batch_size * cfg.grad_accum * model.seq_len * flops_per_token(model)
    fixed, share = cpu_step_model(arch, flops)
    priced = model_rate(flops, peak, share, fixed, "")
    return {"preset": preset_name, "arch": arch, "s_per_step": seconds, "flops": flops, "peak": peak,
            "share": flops / (peak * seconds), "reference_peak": REFERENCE_PEAK,
            "priced": (priced.s_per_step_low, priced.s_per_step_high)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--presets", nargs="+", default=["tiny", "cpu-xs", "cpu-s"])
    p.add_argument("--archs", nargs="+", default=list(ARCHS))
    p.add_argument("--steps", type=int, default=3, help="steps timed after the warm-up step")
    args = p.parse_args(argv)
    print_header("price model: measured CPU steps beside their priced seconds")
    rows = []
    for name in args.presets:
        for arch in args.archs:
            r = time_step(name, arch, args.steps)
            lo, hi = r["priced"]
            rows.append([name, arch, f"{r['flops']:.3g}", f"{r['s_per_step']:.3f}", f"{r['share']:.0%}",
                         f"{lo:.3f}-{hi:.3f}"])  # fmt: skip
    print(table(rows, ["preset", "arch", "FLOPs/step", "s/step measured", "share of peak", "s/step priced"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
