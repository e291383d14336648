"""Search-engine figures: wall time and per-trial overhead of a CI-sized search, and the
speed-up of 2 concurrent Ray trials over the same trials run one at a time.

A. The CI-sized search of tests/integration/test_search.py (tiny model d32 L4, pydoc text, 8 trials of 30
   steps, TPE + ASHA, 2 CPUs): total wall time including Ray's start-up, and for each trial
   the driver-measured wall time minus the trainer's own elapsed time (the overhead: actor
   start or reuse, data mapping, model build, checkpoint copies, reports, records).
B. The same 4 fixed trials (small search model, 1 thread each, through `run_fixed`) with
   max_concurrent=1 and =2, in the order S P P S on one Ray session; ratio sequential/parallel.

    python -m bench.bench_search            # ~3 min on 2 cores
    python -m bench.bench_search --steps 40 # shorter B trials
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench._common import SMALL_SHAPE, median, print_header, save_result, table


def ci_search(root: Path) -> dict[str, float]:
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.tuning import SearchConfig, search

    cfg = SearchConfig(
        name="ci", runs_dir=str(root), preset="tiny", model={"n_layers": 4}, trials=8, grace_steps=10,
        train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5, batch_size=8, eval_windows=8),
        data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    t0 = time.perf_counter()
    study = search(cfg, progress=False)
    wall = time.perf_counter() - t0
    trials = [r for r in study.records if r.curve]
    overhead = [r.wall_s - r.curve[-1]["elapsed_s"] for r in trials]
    return {
        "wall_s": wall,
        "trials": len(study.records),
        "complete": sum(r.status == "complete" for r in study.records),
        "trial_wall_median_s": median([r.wall_s for r in trials]),
        "train_elapsed_median_s": median([r.curve[-1]["elapsed_s"] for r in trials]),
        "overhead_median_s": median(overhead),
        "overhead_max_s": max(overhead),
    }


def concurrency(root: Path, steps: int) -> list[tuple[str, float]]:
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.profiles import ProfileSpec
    from tlmsearch.tuning import FixedTrial, SearchConfig, run_fixed

    cfg = SearchConfig(
        preset="cpu-s", model=dict(SMALL_SHAPE), cpus_per_trial=1,
        train=TrainConfig(steps=steps, batch_size=16, warmup_steps=5, eval_interval=steps // 2, eval_windows=16),
        data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    specs = ["uniform", "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5", "cosine:start=0.5,end=1.5"]
    items = [FixedTrial(spec=ProfileSpec.parse(s), seed=i) for i, s in enumerate(specs)]
    run_fixed(root / "warm", cfg, items[:2], kind="compare", steps=2)  # start and warm the actors
    out = []
    for i, conc in enumerate((1, 2, 2, 1)):
        t0 = time.perf_counter()
        run_fixed(root / f"c{i}", cfg.replace(max_concurrent=conc), items, kind="compare")
        out.append(("sequential" if conc == 1 else "parallel", time.perf_counter() - t0))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=80, help="steps of each part-B trial")
    args = p.parse_args()
    info = print_header("search engine: CI search overhead and 2-trial concurrency")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        a = ci_search(root)
        print(table([[k, v] for k, v in a.items()], ["A: CI-sized search (8 trials)", "value"]))
        b = concurrency(root, args.steps)
        seq = median([t for k, t in b if k == "sequential"])
        par = median([t for k, t in b if k == "parallel"])
        print(table([[k, t] for k, t in b], ["B: 4 trials, order S P P S", "wall s"]))
        print(f"speed-up of 2 concurrent trials over sequential: {seq / par:.2f}x")
    save_result("search", {"machine": info, "ci_search": a, "concurrency": b, "speedup": seq / par})


if __name__ == "__main__":
    main()
