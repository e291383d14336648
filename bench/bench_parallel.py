"""Benchmark 2: parallel efficiency of concurrent one-thread trials on this machine.

The same pair of real training trials is run two ways, interleaved in one run:

- parallel:   two worker processes with 1 torch thread each train one trial each, at once;
- sequential: one worker process with 2 torch threads trains the two trials one after the other.

Both ways do exactly the same training (same models, seeds, steps, evaluations), so the ratio
of wall times, sequential / parallel, is the ratio of total training throughput that running
`cores` one-thread trials at once buys over giving every core to one trial at a time. The
workers are started, warmed up (torch imported, data mapped, matmul peak cached) and idle
before timing starts, as Ray's reused trial actors are. Rounds run in the order S P P S ...
so drift in the machine's load hits both ways alike.

    python -m bench.bench_parallel            # small search model and the cpu-s preset (~3 min)
    python -m bench.bench_parallel --quick    # small model only, one round pair (~1 min)
    python -m bench.bench_parallel --dry      # tiny model, a few steps (smoke test, no figures)
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from dataclasses import dataclass
from typing import Any

from bench._common import SMALL_SHAPE, median, print_header, save_result, table

GOAL = 1.3


@dataclass(frozen=True)
class Workload:
    """One model size: its shape (Preset fields) and the TrainConfig of each trial."""

    name: str
    shape: dict[str, Any]
    train: dict[str, Any]


SMALL = Workload(
    "small (d64 L6 seq64)",
    dict(SMALL_SHAPE),
    {"steps": 150, "batch_size": 16, "warmup_steps": 10, "eval_interval": 75, "eval_windows": 64},
)
CPU_S = Workload(
    "cpu-s (d128 L8 seq256)",
    {},  # the preset itself: the default model of a search
    {"steps": 8, "batch_size": 16, "warmup_steps": 2, "eval_interval": 4, "eval_windows": 16},
)
TINY = Workload(
    "tiny (dry run)",
    {"d_model": 32, "n_layers": 2, "n_heads": 2, "seq_len": 32, "base_width": 64, "multiple_of": 8},
    {"steps": 4, "batch_size": 4, "warmup_steps": 1, "eval_interval": 2, "eval_windows": 4},
)
# the two trials of a pair: a uniform and a tapered profile, different seeds
PAIR = (("uniform", 0), ("cosine:start=1.5,end=0.5", 1))


def order(rounds: int) -> list[str]:
    """Measurement order S P P S S P P S ...: `rounds` of each mode, balanced against drift."""
    out: list[str] = []
    for i in range(rounds):
        out += ["S", "P"] if i % 2 == 0 else ["P", "S"]
    return out


def speedup(seq_walls: list[float], par_walls: list[float]) -> float:
    """Throughput of parallel relative to sequential: median sequential wall / median parallel wall."""
    return median(seq_walls) / median(par_walls)


# ----------------------------------------------------------------------------- workers


def _worker(threads: int, jobs: Any, results: Any) -> None:
    """A long-lived trial process: warm up, then train each job it is given with `threads` threads."""
    import torch

    torch.set_num_threads(threads)
    from tlmsearch.configs.presets import preset
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.profiles import ProfileSpec
    from tlmsearch.training.trainer import train

    def run(job: dict[str, Any]) -> dict[str, Any]:
        p = preset("cpu-s").replace(**job["shape"]) if job["shape"] else preset("cpu-s")
        widths = ProfileSpec.parse(job["profile"]).widths(p.budget())
        cfg = TrainConfig(**job["train"], threads=threads, seed=job["seed"])
        t0 = time.perf_counter()
        r = train(p.model_config("transformer", widths), cfg, DataConfig(corpus=job["corpus"]))
        return {"wall_s": time.perf_counter() - t0, "tokens_per_s": r.metrics["tokens_per_s"]}

    while True:
        job = jobs.get()
        if job is None:
            return
        results.put(run(job))


class Pool:
    """Two 1-thread workers and one `cores`-thread worker, started and warmed up."""

    def __init__(self, corpus: str, warm: Workload, threads_seq: int) -> None:
        ctx = mp.get_context("spawn")
        self.corpus = corpus
        self.queues = {k: (ctx.Queue(), ctx.Queue()) for k in ("p0", "p1", "s")}
        threads = {"p0": 1, "p1": 1, "s": threads_seq}
        self.procs = [ctx.Process(target=_worker, args=(threads[k], *self.queues[k]), daemon=True) for k in self.queues]
        for proc in self.procs:
            proc.start()
        warmup = {**warm.train, "steps": 2, "warmup_steps": 1, "eval_interval": 2}
        for k in self.queues:  # warm up one after another (no contention in the warm-up)
            self.queues[k][0].put(self._job(Workload("warm", warm.shape, warmup), PAIR[0]))
            self.queues[k][1].get()

    def _job(self, w: Workload, trial: tuple[str, int]) -> dict[str, Any]:
        return {"shape": w.shape, "train": w.train, "profile": trial[0], "seed": trial[1], "corpus": self.corpus}

    def parallel(self, w: Workload) -> tuple[float, list[dict[str, Any]]]:
        t0 = time.perf_counter()
        for k, trial in zip(("p0", "p1"), PAIR, strict=True):
            self.queues[k][0].put(self._job(w, trial))
        out = [self.queues[k][1].get() for k in ("p0", "p1")]
        return time.perf_counter() - t0, out

    def sequential(self, w: Workload) -> tuple[float, list[dict[str, Any]]]:
        t0 = time.perf_counter()
        for trial in PAIR:
            self.queues["s"][0].put(self._job(w, trial))
        out = [self.queues["s"][1].get() for _ in PAIR]
        return time.perf_counter() - t0, out

    def close(self) -> None:
        for jobs, _ in self.queues.values():
            jobs.put(None)
        for proc in self.procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()


def measure(pool: Pool, w: Workload, rounds: int, log: Any = print) -> dict[str, Any]:
    walls: dict[str, list[float]] = {"S": [], "P": []}
    tps: dict[str, list[float]] = {"S": [], "P": []}
    for mode in order(rounds):
        wall, out = pool.sequential(w) if mode == "S" else pool.parallel(w)
        walls[mode].append(wall)
        # training-only throughput (evaluation excluded): sum when concurrent, mean when one after another
        rate = sum(r["tokens_per_s"] for r in out) if mode == "P" else median([r["tokens_per_s"] for r in out])
        tps[mode].append(rate)
        log(f"  {w.name}: {'parallel  ' if mode == 'P' else 'sequential'} {wall:6.1f} s, "
            f"training {rate:7.0f} tokens/s")  # fmt: skip
    return {
        "workload": w.name,
        "train": w.train,
        "seq_walls": walls["S"],
        "par_walls": walls["P"],
        "wall_ratio": speedup(walls["S"], walls["P"]),
        "tokens_per_s_ratio": median(tps["P"]) / median(tps["S"]),
        "round_ratios": [s / p for s, p in zip(walls["S"], walls["P"], strict=True)],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2, help="measurements of each mode per model size")
    ap.add_argument("--quick", action="store_true", help="small model only, one round of each mode")
    ap.add_argument("--dry", action="store_true", help="tiny model, a few steps: a smoke test, not a measurement")
    ap.add_argument("--corpus", default="shakespeare")
    ap.add_argument("--out", default="", help="JSON file for the figures (default bench/data/parallel-latest.json)")
    args = ap.parse_args(argv)

    info = print_header("bench_parallel: 2 concurrent 1-thread trials vs the same trials one after another, 2 threads")
    from tlmsearch.core.base import DataConfig
    from tlmsearch.data import prepare

    prepare(DataConfig(corpus=args.corpus))
    cores = int(info["cores"])
    workloads = [TINY] if args.dry else [SMALL] if args.quick else [SMALL, CPU_S]
    rounds = 1 if (args.quick or args.dry) else args.rounds
    pool = Pool(args.corpus, workloads[0], threads_seq=cores)
    try:
        results = [measure(pool, w, rounds) for w in workloads]
    finally:
        pool.close()

    print(f"\nthroughput ratio = sequential wall / parallel wall (same trials); goal >= {GOAL}")
    print(table(
        [[r["workload"], median(r["seq_walls"]), median(r["par_walls"]), r["wall_ratio"], r["tokens_per_s_ratio"],
          " ".join(f"{x:.2f}" for x in r["round_ratios"])] for r in results],
        ["model", "seq wall s", "par wall s", "ratio", "train-only ratio", "per round"],
    ))  # fmt: skip
    worst = min(r["wall_ratio"] for r in results)
    if worst >= 1.05:
        advice = f"run {cores} trials at once with 1 thread each (max_concurrent=0, cpus_per_trial=1)"
    else:
        advice = f"run 1 trial at a time with {cores} threads (max_concurrent=1, cpus_per_trial={cores})"
    print(f"goal {'met' if worst >= GOAL else 'NOT met'} (lowest ratio {worst:.2f}); recommended default: {advice}")
    if not args.dry or args.out:
        result = {"machine": info, "results": results, "goal": GOAL, "advice": advice, "argv": sys.argv[1:]}
        print(f"figures written to {save_result('parallel', result, args.out or None)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
