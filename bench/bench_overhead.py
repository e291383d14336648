"""Benchmark 1: orchestration overhead of running trials on Ray Tune instead of a plain loop.

The same set of real training trials (small search model, a few width profiles, one seed) is
run two ways, side by side in one run, for several trial lengths:

- plain: one after another in this Python process with `tlmsearch.train` (no checkpoints);
- ray:   by the search engine, `tlmsearch.tuning.run_fixed` (Ray Tune trial actors, reports,
  a checkpoint at every evaluation, trial records), one trial at a time
  (`max_concurrent=1`) with the same number of threads (`cpus_per_trial`, default 1 as in a
  search: a 2-thread trial on a shared machine measures the other users' load more than Ray).

Both do exactly the same training (same models, seeds, steps and evaluations). The ratio
ray / plain of wall times is printed with and without Ray's start-up (paid once per search);
the goal is <= 1.15 for trials of ~30 s. Trial lengths are set by calibrating the seconds per
step first; the table shows the measured plain seconds per trial. Ray is started and shut
down around each ray measurement, so the plain runs never share the machine with idle Ray
processes; the two ways alternate (plain ray ray plain ... with `--rounds 2`, medians), the
first one changing between trial lengths.

    python -m bench.bench_overhead            # trials of ~30, ~10 and ~3 s, 3 per set (~5 min)
    python -m bench.bench_overhead --trials 2 --rounds 2   # 2 per set, each way measured twice (~7 min)
    python -m bench.bench_overhead --quick    # trials of ~10 and ~3 s, 2 per set (~2 min)
    python -m bench.bench_overhead --dry      # tiny model, a few steps (smoke test, no figures)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._common import SMALL_SHAPE, median, print_header, save_result, table

GOAL = 1.15
PROFILES = ("uniform", "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5", "cosine:start=0.5,end=1.5")
EVALS_PER_TRIAL = 4
TINY_SHAPE = {"d_model": 32, "n_layers": 2, "n_heads": 2, "seq_len": 32, "base_width": 64, "multiple_of": 8}


@dataclass(frozen=True)
class Setup:
    shape: dict[str, Any]
    batch_size: int
    eval_windows: int
    threads: int
    corpus: str


def search_config(s: Setup, steps: int, runs_dir: str) -> Any:
    """The SearchConfig whose fixed trials match the plain ones exactly."""
    from tlmsearch.core.base import DataConfig
    from tlmsearch.tuning import SearchConfig

    return SearchConfig(
        name="overhead",
        runs_dir=runs_dir,
        preset="cpu-s",
        model=dict(s.shape),
        scheduler="none",
        max_concurrent=1,
        cpus_per_trial=float(s.threads),
        seed=0,
        train=train_config(s, steps),
        data=DataConfig(corpus=s.corpus),
    )


def train_config(s: Setup, steps: int) -> Any:
    from tlmsearch.core.base import TrainConfig

    return TrainConfig(
        steps=steps,
        batch_size=s.batch_size,
        warmup_steps=min(10, steps // 2),
        eval_interval=max(1, steps // EVALS_PER_TRIAL),
        eval_windows=s.eval_windows,
        threads=s.threads,
    )


def steps_for(seconds: float, sec_per_step: float) -> int:
    """Steps that last about `seconds`, a multiple of the evaluations per trial (at least one each)."""
    raw = max(EVALS_PER_TRIAL, round(seconds / sec_per_step))
    return max(EVALS_PER_TRIAL, raw - raw % EVALS_PER_TRIAL)


# ----------------------------------------------------------------------------- the two ways


def fmt(xs: list[float]) -> str:
    return "/".join(f"{x:.1f}" for x in xs)


def run_plain(s: Setup, steps: int, profiles: tuple[str, ...]) -> float:
    """Wall seconds of training `profiles` one after another in this process."""
    from tlmsearch.configs.resolve import trial_shape
    from tlmsearch.core.base import DataConfig
    from tlmsearch.profiles import ProfileSpec
    from tlmsearch.training.trainer import train

    cfg = search_config(s, steps, "unused")
    t0 = time.perf_counter()
    for text in profiles:
        _, _, model = trial_shape(cfg, ProfileSpec.parse(text))
        result = train(model, train_config(s, steps).replace(seed=0), DataConfig(corpus=s.corpus))
        assert int(result.metrics["steps"]) == steps
    return time.perf_counter() - t0


def run_ray(s: Setup, steps: int, profiles: tuple[str, ...]) -> tuple[float, float]:
    """(wall with Ray's start-up, wall of the trials alone) of the same trials via run_fixed."""
    import ray

    from tlmsearch.profiles import ProfileSpec
    from tlmsearch.tuning import FixedTrial, run_fixed
    from tlmsearch.tuning.ray_session import ensure_ray

    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        cfg = search_config(s, steps, tmp)
        items = [FixedTrial(spec=ProfileSpec.parse(text), seed=0) for text in profiles]
        t0 = time.perf_counter()
        ensure_ray()
        t1 = time.perf_counter()
        records = run_fixed(Path(tmp) / "run", cfg, items, kind="verify")
        t2 = time.perf_counter()
        ray.shutdown()
    bad = [r for r in records if r.status != "complete" or r.steps != steps]
    if len(records) != len(profiles) or bad:
        raise RuntimeError(f"ray trials did not all complete: {[(r.status, r.steps, r.reason) for r in records]}")
    return t2 - t0, t2 - t1


def calibrate(s: Setup) -> float:
    """Seconds per training step of the plain loop (a short run after a warm-up run)."""
    run_plain(s, 8, PROFILES[:1])  # warm-up: data, matmul peak, allocator
    n = 24
    return run_plain(s, n, PROFILES[:1]) / n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", default="30,10,3", help="target seconds per trial, comma-separated")
    ap.add_argument("--trials", type=int, default=3, help="trials per set (profiles)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per trial (0 = all cores)")
    ap.add_argument("--rounds", type=int, default=1, help="measurements of each way per trial length (medians)")
    ap.add_argument("--quick", action="store_true", help="trials of ~10 and ~3 s, 2 per set")
    ap.add_argument("--dry", action="store_true", help="tiny model, a few steps: a smoke test, not a measurement")
    ap.add_argument("--corpus", default="shakespeare")
    ap.add_argument("--out", default="", help="JSON file for the figures (default bench/data/overhead-latest.json)")
    args = ap.parse_args(argv)

    info = print_header("bench_overhead: the same trials on Ray (run_fixed) vs a plain loop of tlmsearch.train")
    threads = args.threads or int(info["cores"])
    if args.dry:
        s = Setup(shape=TINY_SHAPE, batch_size=4, eval_windows=4, threads=1, corpus="pydoc")
        plan, n_trials = [(0.0, 4)], 2
    else:
        s = Setup(shape=dict(SMALL_SHAPE), batch_size=16, eval_windows=64, threads=threads, corpus=args.corpus)
        seconds = [10.0, 3.0] if args.quick else [float(x) for x in args.seconds.split(",")]
        n_trials = 2 if args.quick else args.trials
        per_step = calibrate(s)
        print(f"calibration: {per_step * 1000:.1f} ms per step ({threads} threads)")
        plan = [(sec, steps_for(sec, per_step)) for sec in seconds]
    profiles = tuple(PROFILES[i % len(PROFILES)] for i in range(n_trials))
    rounds = 1 if (args.dry or args.quick) else args.rounds

    rows = []
    for i, (target, steps) in enumerate(plan):
        # plain and ray alternate (P R R P ...), starting with the other one at each trial length
        order = [m for r in range(rounds) for m in (("plain", "ray") if (i + r) % 2 == 0 else ("ray", "plain"))]
        plains, starts, onlys = [], [], []
        for mode in order:
            if mode == "plain":
                plains.append(run_plain(s, steps, profiles))
            else:
                with_start, trials_only = run_ray(s, steps, profiles)
                starts.append(with_start)
                onlys.append(trials_only)
        plain, with_start, trials_only = median(plains), median(starts), median(onlys)
        row = {
            "target_s": target,
            "steps": steps,
            "trials": n_trials,
            "plain_s_per_trial": plain / n_trials,
            "plain_s": plains,
            "ray_s": starts,
            "ray_trials_s": onlys,
            "ratio": with_start / plain,
            "ratio_without_start": trials_only / plain,
            "overhead_s_per_trial": (trials_only - plain) / n_trials,
        }
        rows.append(row)
        print(f"  ~{target:g} s trials ({steps} steps): plain {fmt(plains)} s, ray {fmt(starts)} s "
              f"({fmt(onlys)} s without start-up)", flush=True)  # fmt: skip

    print(f"\nratio = ray wall / plain wall for the same {n_trials} trials ({s.threads} threads, 1 at a time); "
          f"goal <= {GOAL} at ~30 s trials")  # fmt: skip
    print(table(
        [[r["steps"], r["plain_s_per_trial"], r["ratio"], r["ratio_without_start"], r["overhead_s_per_trial"]]
         for r in rows],
        ["steps", "plain s/trial", "ratio", "ratio w/o Ray start", "overhead s/trial"],
    ))  # fmt: skip
    if not args.dry or args.out:
        result = {"machine": info, "threads": s.threads, "rows": rows, "goal": GOAL, "argv": sys.argv[1:]}
        print(f"figures written to {save_result('overhead', result, args.out or None)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
