"""SIGKILL one data-parallel worker of a trial at a random step, N times, and compare the records
with an uninterrupted run's (issue 49's fault acceptance).

Two fixed trials (uniform and cosine, seed 0) of two Ray Train workers each (gloo, one CPU each)
train on a local Ray first without interruption (the reference), then `--kills` times more, each
time with one worker of one trial SIGKILLed: the trial, the worker's rank and the step are drawn
from `--seed` (a step among the evaluations after the first, every `EVAL` steps: the kill
lands as soon as the trial's report of that step reaches the driver, while its workers train on).
Ray Train restarts the trial's workers from the last evaluation's checkpoint. Per run the
records must equal the reference's: per (profile, seed) the same curve (every evaluation step
once, validation and training loss within `TOL`: the restarted workers redo their steps with the
same windows and sums), nothing lost, nothing twice, no trial failed that the reference trained;
`retries` counts the restart.

    python -m bench.bench_worker_kills                 # 5 kills, seed 0
    python -m bench.bench_worker_kills --kills 1 --out /tmp/k.json
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench._common import load_average, print_header, save_result, table

STEPS, EVAL, BATCH = 40, 2, 4
TOL = 1e-6
PROFILES = ("uniform", "cosine:start=1.5,end=0.5")


def config(name: str, runs_dir: Path) -> Any:
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.core.base import DataConfig, TrainConfig

    train = TrainConfig(steps=STEPS, warmup_steps=2, eval_interval=EVAL, eval_windows=4, batch_size=BATCH, threads=1)
    return SearchConfig(
        name=name, runs_dir=str(runs_dir), arch="transformer", preset="tiny", trials=1, noise_seeds=0,
        cpus_per_trial=1, gpus_per_trial=0, workers_per_trial=2, train=train, data=DataConfig(corpus="pydoc"),
    )  # fmt: skip


def compare(reference: list[Any], records: list[Any]) -> dict[str, Any]:
    """Lost, duplicated, wrongly failed, changed (a curve unlike the reference's) and the largest
    loss difference of `records` against `reference` (TrialRecords, keyed by profile and seed)."""

    def key(r: Any) -> tuple[str, int]:
        return (json.dumps(r.profile, sort_keys=True), int(r.train.get("seed", -1)))

    ref = {key(r): r for r in reference}
    seen = Counter(key(r) for r in records)
    mine = {key(r): r for r in records}
    changed, worst = [], 0.0
    for k, r in ref.items():
        if k not in mine or mine[k].status != "complete":
            continue
        a, b = mine[k].curve, r.curve
        if [int(c["step"]) for c in a] != [int(c["step"]) for c in b]:
            changed.append(k)
            continue
        diff = max((abs(x[m] - y[m]) for x, y in zip(a, b, strict=True) for m in ("val_loss", "train_loss")), default=0)
        worst = max(worst, diff)
        if diff > TOL:
            changed.append(k)
    return {
        "lost": sum(1 for k in ref if k not in seen),
        "duplicated": sum(n - 1 for n in seen.values() if n > 1),
        "wrongly_failed": sum(
            1 for k, r in ref.items() if r.status == "complete" and k in mine and mine[k].status != "complete"
        ),
        "extra": sum(1 for k in seen if k not in ref),
        "changed": len(changed),
        "max_diff": worst,
        "retries": sum(r.retries for r in records),
    }


class Killer:
    """Watches the trials' reports in the driver (Tune calls its callbacks there) and SIGKILLs the
    `rank`-th Ray Train worker of this process's Ray once trial `which` (0 or 1, in start order)
    has reported step `step` or later."""

    def __init__(self, which: int, step: int, rank: int) -> None:
        self.which, self.step, self.rank = which, step, rank
        self.order: list[str] = []
        self.latest: dict[str, int] = {}
        self.killed: dict[str, Any] = {}
        self.done = threading.Event()

    def on_result(self, trial_id: str, step: int) -> None:
        if trial_id not in self.order:
            self.order.append(trial_id)
        self.latest[trial_id] = step

    def watch(self) -> None:
        import psutil

        while not self.done.is_set() and not self.killed:
            trial = self.order[self.which] if len(self.order) > self.which else None
            if trial is not None and self.latest.get(trial, 0) >= self.step:
                workers = []
                for proc in psutil.Process().children(recursive=True):
                    try:
                        if "RayTrainWorker" in " ".join(proc.cmdline()):
                            workers.append(proc)
                    except psutil.Error:
                        continue
                if workers:
                    victim = sorted(workers, key=lambda p: p.pid)[self.rank % len(workers)]
                    victim.kill()
                    self.killed = {"pid": victim.pid, "reported_step": self.latest[trial], "trial": self.which}
                    return
            time.sleep(0.01)


def run(folder: Path, killer: Killer | None) -> tuple[list[Any], float]:
    from tlmsearch.configs.search import SearchConfig  # noqa: F401  (the config's module, loaded)
    from tlmsearch.profiles import ProfileSpec
    from tlmsearch.tuning.fixed import FixedTrial, run_fixed
    from tlmsearch.tuning.recorder import RecordWriter

    def on_trial_result(self: Any, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        if killer is not None and "step" in result:
            killer.on_result(trial.trial_id, int(result["step"]))

    RecordWriter.on_trial_result = on_trial_result  # type: ignore[method-assign]
    items = [FixedTrial(spec=ProfileSpec.parse(p), seed=0) for p in PROFILES]
    thread = None
    if killer is not None:
        thread = threading.Thread(target=killer.watch, daemon=True)
        thread.start()
    t0 = time.perf_counter()
    try:
        records = run_fixed(folder / "run", config(folder.name, folder), items, "verify")
    finally:
        if killer is not None:
            killer.done.set()
            assert thread is not None
            thread.join()
    return records, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import tempfile

    from tlmsearch.tuning.ray_session import ensure_ray

    info = print_header("bench_worker_kills: a data-parallel worker SIGKILLed at a random step")
    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-worker-kills-"))
    ensure_ray()
    load_before = load_average()
    reference, ref_s = run(root / "reference", None)
    assert all(r.status == "complete" for r in reference), [r.reason for r in reference]
    rng = random.Random(args.seed)
    rows, results = [], []
    for k in range(args.kills):
        killer = Killer(which=rng.randrange(2), step=EVAL * rng.randint(1, STEPS // EVAL - 1), rank=rng.randrange(2))
        records, wall = run(root / f"kill{k}", killer)
        got = compare(reference, records)
        got.update(killed=killer.killed, asked_step=killer.step, wall_s=wall)
        results.append(got)
        rows.append([
            k, killer.which, killer.rank, killer.step, killer.killed.get("reported_step", "-"), got["lost"],
            got["duplicated"], got["wrongly_failed"], got["changed"], got["retries"], got["max_diff"], wall,
        ])  # fmt: skip
    print(table(rows, ["kill", "trial", "rank", "step", "killed after", "lost", "dup", "failed", "changed",
                       "retries", "max |diff|", "wall s"]))  # fmt: skip
    totals = {f: sum(r[f] for r in results) for f in ("lost", "duplicated", "wrongly_failed", "changed", "extra")}
    killed = sum(1 for r in results if r["killed"])
    print(
        f"{killed} of {args.kills} kills landed; lost {totals['lost']}, duplicated {totals['duplicated']}, wrongly "
        f"failed {totals['wrongly_failed']}, changed {totals['changed']}, extra {totals['extra']}; reference "
        f"{ref_s:.0f} s; load {load_before[0]:.1f} before, {load_average()[0]:.1f} after"
    )
    save_result("worker_kills", {"info": info, "reference_s": ref_s, "runs": results, "totals": totals}, args.out)
    return 0 if killed == args.kills and not any(totals.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
