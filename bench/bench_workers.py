"""CPU wall time of one training run on 1 worker against 2 data-parallel workers (Ray Train, gloo),
interleaved in one process so that both see the same load (issue 49: about 1x is expected on a
2-core machine; this is about correctness, the numbers are the same).

Each round trains the same cpu-xs run once alone (`training.trainer.train`, no Ray) and once on
two workers (`tuning.train_run.train_on_workers` on a local Ray started once, before the first
round), the order alternating between rounds. Per run: the call's wall time (a 2-worker call
includes starting its Ray Train workers and their process group) and the trainer's own
training time (`wall_s` of its metrics: the steps and evaluations); the ratios 2 workers / 1
worker are reported per round with their median, and the final validation losses side by side.

    python -m bench.bench_workers                       # 3 rounds of 60 steps at cpu-xs
    python -m bench.bench_workers --rounds 1 --steps 4 --preset tiny
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from bench._common import load_average, print_header, save_result, table


def one_run(workers: int, model: Any, train_cfg: Any, data: Any) -> tuple[float, float, float]:
    """(call wall s, trainer wall_s, final val_loss) of one run on `workers` workers."""
    from tlmsearch.training.trainer import train
    from tlmsearch.tuning.train_run import train_on_workers

    t0 = time.perf_counter()
    if workers == 1:
        result = train(model, train_cfg, data)
    else:
        result = train_on_workers(model, train_cfg, data, workers=workers)
    wall = time.perf_counter() - t0
    return wall, float(result.metrics["wall_s"]), float(result.metrics["val_loss"])  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--preset", default="cpu-xs")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from tlmsearch.configs.presets import preset
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.tuning.ray_session import ensure_ray

    info = print_header(f"bench_workers: {args.preset}, {args.steps} steps, 1 worker vs 2 (gloo), interleaved")
    shape = preset(args.preset)
    model = shape.model_config("transformer", (shape.budget().base_width,) * shape.n_layers)
    train_cfg = TrainConfig(
        steps=args.steps,
        eval_interval=args.steps,
        eval_windows=8,
        batch_size=args.batch_size,
        threads=1,
        warmup_steps=2,
    )
    data = DataConfig(corpus="pydoc")
    t0 = time.perf_counter()
    ensure_ray()
    ray_s = time.perf_counter() - t0
    one_run(1, model, train_cfg, data)  # warm-up: the corpus prepared, torch's kernels loaded
    load_before = load_average()
    rows, rounds = [], []
    for r in range(args.rounds):
        order = (1, 2) if r % 2 == 0 else (2, 1)
        got = {w: one_run(w, model, train_cfg, data) for w in order}
        (w1, t1, l1), (w2, t2, l2) = got[1], got[2]
        rounds.append({"one": got[1], "two": got[2], "order": order})
        rows.append([r, f"{order[0]},{order[1]}", w1, w2, w2 / w1, t1, t2, t2 / t1, abs(l2 - l1)])
    print(table(rows, ["round", "order", "call 1w s", "call 2w s", "ratio", "train 1w s", "train 2w s", "ratio",
                       "|val diff|"]))  # fmt: skip
    call = statistics.median(row[4] for row in rows)
    trained = statistics.median(row[7] for row in rows)
    load_after = load_average()
    print(
        f"median ratio 2 workers / 1 worker: {call:.2f}x per call (Ray Train start included), {trained:.2f}x of "
        f"training time; Ray's own start {ray_s:.0f} s (once, not in the ratios); load {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after; largest |val_loss difference| {max(row[8] for row in rows):.2g}"
    )
    save_result(
        "workers",
        {"info": info, "args": vars(args), "rounds": rounds, "median_call_ratio": call, "median_train_ratio": trained,
         "load": [load_before, load_after], "ray_start_s": ray_s},
        args.out,
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
