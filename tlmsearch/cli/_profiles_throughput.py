"""`tlmsearch profiles --throughput`: the profiles' models timed fairly, side by side.

Each profile's model (the --preset's shape and --arch, the profile's widths) is built on this
machine and timed by `tlmsearch.costs.throughput.measure`: forward+backward and inference of one
batch, every model once per round in rotated order, --repeats rounds, relative to the uniform
profile (added when not given) timed in the same rounds, with an A/A copy of it for the noise
floor. Printed per mode: a ranking by median speed against uniform, its range over rounds, the
median tokens/s, and whether the difference from uniform exceeds the noise floor.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

REFERENCE = "uniform"


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("throughput (with --throughput; needs --preset)")
    g.add_argument(
        "--throughput",
        action="store_true",
        help="time each profile's model (forward+backward, inference) interleaved with uniform, repeated",
    )
    g.add_argument("--arch", default="transformer", help="architecture of the timed models (default transformer)")
    g.add_argument("--repeats", type=int, default=5, help="timed rounds (default 5)")
    g.add_argument("--batch-size", type=int, default=8, help="sequences per timed call (default 8)")
    g.add_argument("--threads", type=int, default=1, help="torch threads while timing (default 1)")
    g.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="where to time (default cpu)")


def check_args(args: argparse.Namespace) -> None:
    """The --throughput flags (and --arch), refused in one line before anything is printed."""
    from tlmsearch.core.architectures import ARCHITECTURE_NAMES
    from tlmsearch.core.base import check_choice
    from tlmsearch.core.validate import check_int
    from tlmsearch.errors import ConfigError

    if not args.preset:
        raise ConfigError("--throughput needs --preset: the timed models take its shape")
    check_choice("--arch", args.arch, ARCHITECTURE_NAMES)
    check_int("--repeats", args.repeats, 1, 1000)
    check_int("--batch-size", args.batch_size, 1, 4096)
    check_int("--threads", args.threads, 0, 1024)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("--device cuda: no CUDA device here")


def run(args: argparse.Namespace, budget: Any, specs: list[Any]) -> int:
    from tlmsearch.configs.presets import preset
    from tlmsearch.costs.throughput import ThroughputConfig, measure, rankings

    check_args(args)
    pre = preset(args.preset)
    names = [str(s) for s in specs]
    if REFERENCE not in names:
        names, specs = [REFERENCE, *names], [_uniform(), *specs]
    models = {
        n: pre.model_config(args.arch, tuple(s.widths(budget)), n_layers=budget.n_layers)
        for n, s in zip(names, specs, strict=True)
    }
    cfg = ThroughputConfig(batch_size=args.batch_size, repeats=args.repeats, threads=args.threads, device=args.device)
    ranked = rankings(measure(models, REFERENCE, cfg))
    if args.json:
        out = {
            "config": cfg.to_dict(),
            "arch": args.arch,
            "preset": args.preset,
            "rankings": [r.to_dict() for r in ranked],
        }
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    print(
        f"{args.arch}, preset {args.preset}, batch {cfg.batch_size} x seq {pre.seq_len}, {cfg.threads or 'default'} "
        f"thread(s), {cfg.device}; {cfg.repeats} rounds, models interleaved in rotated order, after "
        f"{cfg.warmup} warm-up call(s) each"
    )
    for r in ranked:
        what = "forward+backward" if r.mode == "train" else "inference"
        print(f"\n{what}: speed against uniform (median of per-round ratios, > 1 = faster); "
              f"noise floor (A/A copy of uniform) {100 * r.floor:.1f}%")  # fmt: skip
        print(
            f"  {'rank':>4}  {'profile':<32} {'vs uniform':>10} {'range over rounds':>19} {'tok/s':>10}  beyond noise?"
        )
        for k, s in enumerate(r.speeds, start=1):
            beyond = "no" if r.within_noise(s) else ("faster" if s.ratio > 1 else "slower")
            print(f"  {k:>4}  {s.name:<32} {s.ratio:>10.3f} {f'[{s.lo:.3f}, {s.hi:.3f}]':>19} "
                  f"{s.tokens_per_s:>10,.0f}  {beyond}")  # fmt: skip
    return 0


def _uniform() -> Any:
    from tlmsearch.profiles import ProfileSpec

    return ProfileSpec.parse(REFERENCE)
