"""Packed against separate training: members per second, side by side in one run (issue 29).

M members of one architecture and shape (seeds 0..M-1, profiles alternating uniform and the
cosine taper 1.5x -> 0.5x, so the pack pads) are trained twice, interleaved: once packed
(`tlmsearch.training.pack.train_pack`, one process, one forward for all), once separately (`trainer.train`
for each member in turn, one process). Printed per cell (shape, threads, members): members per
second of each and their ratio, from wall time (build, training, evaluation: what a trial costs)
and from training time only (the steps: what packing changes). A separate member's cost does not
depend on M, so `--separate-max` trains at most that many separately and counts per member.

    python -m bench.bench_pack                                       # tiny, cpu-xs, cpu-s; 1 and 2 threads
    python -m bench.bench_pack --presets cpu-xs --members 1 8 --threads 1 --steps 10 --repeats 3
    python -m bench.bench_pack --presets cpu-xs cpu-s gpu-20m --members 1 4 16 64 --device cuda

`gpu-20m` is a ~20 M-parameter shape (d 512, 6 layers, seq 256) for GPUs. Results are appended
to the `--out` JSON as each cell finishes (a run cut short keeps what it measured).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from bench._common import DATA_DIR, machine_info, machine_line, median, table

# (steps, batch size) per shape: a few seconds per member on one CPU core
SHAPES: dict[str, tuple[int, int]] = {"tiny": (30, 8), "cpu-xs": (10, 8), "cpu-s": (4, 8), "gpu-20m": (20, 8)}


def shape_preset(name: str) -> Any:
    from tlmsearch.configs.presets import preset

    if name == "gpu-20m":  # 6 x (4 d^2 + 3 d f) = 19.0 M non-embedding parameters
        return preset("cpu-s").replace(name="gpu-20m", d_model=512, n_layers=6, n_heads=8, base_width=1376)
    return preset(name)


def make_members(shape: str, m: int, args: argparse.Namespace) -> list[Any]:
    from tlmsearch.core.base import TrainConfig
    from tlmsearch.profiles import profile
    from tlmsearch.training.pack import Member

    p = shape_preset(shape)
    budget = p.budget()
    profiles = [profile("uniform", budget), profile("cosine", budget)]
    steps, batch = SHAPES[shape]
    steps = args.steps or steps
    members = []
    for i in range(m):
        train = TrainConfig(
            steps=steps,
            batch_size=args.batch_size or batch,
            eval_interval=steps,
            eval_windows=8,
            warmup_steps=min(5, steps),
            threads=0,
            seed=i,
            device=args.device,
            dtype=args.dtype,
        )
        members.append(Member(model=p.model_config(args.arch, profiles[i % 2]), train=train))
    return members


def run_packed(members: list[Any], data_cfg: Any) -> tuple[float, float]:
    """(wall seconds, training seconds) of the pack."""
    from tlmsearch.training.pack import train_pack

    t0 = time.perf_counter()
    outcomes = train_pack(members, data_cfg)
    wall = time.perf_counter() - t0
    metrics = [o.result.metrics for o in outcomes if o.result is not None]
    if len(metrics) != len(members):
        raise RuntimeError("a member diverged in the benchmark")
    train_s = metrics[0]["tokens"] / metrics[0]["tokens_per_s"]  # the pack's training time
    return wall, train_s


def run_separate(members: list[Any], data_cfg: Any) -> tuple[float, float]:
    """(wall seconds, training seconds) of the members trained one after another."""
    from tlmsearch.training.trainer import train

    wall = train_s = 0.0
    for m in members:
        t0 = time.perf_counter()
        result = train(m.model, m.train, data_cfg)
        wall += time.perf_counter() - t0
        train_s += result.metrics["tokens"] / result.metrics["tokens_per_s"]
    return wall, train_s


def cell(shape: str, threads: int, m: int, args: argparse.Namespace, data_cfg: Any) -> dict[str, Any]:
    from tlmsearch.training.hardware import thread_count

    members = make_members(shape, m, args)
    alone = members[: max(1, min(m, args.separate_max))]
    packed: list[tuple[float, float]] = []
    separate: list[tuple[float, float]] = []
    with thread_count(threads):
        for _ in range(args.repeats):  # interleaved: machine noise hits both alike
            packed.append(run_packed(members, data_cfg))
            separate.append(run_separate(alone, data_cfg))
    row: dict[str, Any] = {"shape": shape, "threads": threads, "members": m, "separate_members": len(alone)}
    for i, what in enumerate(("wall", "train")):
        pk = median([m / t[i] for t in packed])
        sp = median([len(alone) / t[i] for t in separate])
        row[f"packed_members_per_s_{what}"] = pk
        row[f"separate_members_per_s_{what}"] = sp
        row[f"ratio_{what}"] = pk / sp
        row[f"ratios_{what}"] = [(m / p[i]) / (len(alone) / s[i]) for p, s in zip(packed, separate, strict=True)]
    return row


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--presets", nargs="+", default=["tiny", "cpu-xs", "cpu-s"], choices=sorted(SHAPES))
    ap.add_argument("--members", nargs="+", type=int, default=[4])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--arch", default="transformer")
    ap.add_argument("--steps", type=int, default=0, help="0: the shape's default (SHAPES)")
    ap.add_argument("--batch-size", type=int, default=0, help="0: the shape's default (SHAPES)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--separate-max", type=int, default=4, help="train at most this many members separately")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--corpus", default="shakespeare")
    ap.add_argument("--out", default=str(DATA_DIR / "pack-latest.json"))
    args = ap.parse_args(argv)

    from tlmsearch.core.base import DataConfig
    from tlmsearch.data import prepare

    data_cfg = DataConfig(corpus=args.corpus)
    prepare(data_cfg)
    info = machine_info()
    print("== packed vs separate training (members per second)")
    print(machine_line(info))
    result: dict[str, Any] = {"machine": info, "args": vars(args), "cells": []}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for shape in args.presets:
        # what the first run of either path pays once (CUDA context and kernels, the matmul peak's
        # cache, the first build): paid here, untimed, one step each, so the first cell's wall
        # ratio does not carry it (SMALL=1 device checks measured 29x wall at 1 member without it)
        warm = argparse.Namespace(**{**vars(args), "steps": 1})
        run_packed(make_members(shape, 2, warm), data_cfg)
        run_separate(make_members(shape, 1, warm), data_cfg)
        for threads in args.threads:
            for m in sorted(args.members):
                try:
                    row = cell(shape, threads, m, args, data_cfg)
                except Exception as e:  # out of memory at large M: keep the smaller cells' figures
                    row = {"shape": shape, "threads": threads, "members": m, "error": f"{type(e).__name__}: {e}"[:300]}
                result["cells"].append(row)
                out.write_text(json.dumps(result, indent=1, default=str) + "\n")
                if "error" in row:
                    print(f"{shape} threads={threads} members={m}: {row['error']}", flush=True)
                    break
                print(
                    f"{shape} threads={threads} members={m}: packed/separate {row['ratio_wall']:.2f}x wall, "
                    f"{row['ratio_train']:.2f}x training",
                    flush=True,
                )
    result["machine_after"] = machine_info()["load_avg_1m_5m_15m"]
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    headers = ["shape", "thr", "M", "packed m/s", "separate m/s", "ratio wall", "ratio train", "ratios (train)"]
    done = [c for c in result["cells"] if "error" not in c]
    rows = [
        [
            c["shape"],
            c["threads"],
            c["members"],
            c["packed_members_per_s_wall"],
            c["separate_members_per_s_wall"],
            c["ratio_wall"],
            c["ratio_train"],
            " ".join(f"{r:.2f}" for r in c["ratios_train"]),
        ]
        for c in done
    ]
    print(table(rows, headers))
    print(f"load after: {result['machine_after']}; wrote {out}")


if __name__ == "__main__":
    main()
