"""Benchmark 5: sampler x scheduler, replayed on benchmark 4's recorded table with its curves.

Does early stopping still pay when the sampler must learn from trials it cut short? Each study
runs sequential trials of the 2-D "knots3" space (benchmark 4) whose learning curve is the
bilinear interpolation, step by step, of the recorded real curves (`bench/data/
sampler_table.json`: val_loss at every evaluation, 50 ... 200 steps). Under `asha` the search
engine's own scheduler (`tlmsearch.tuning.scheduler.BaselineKeepingASHA`, one bracket, grace
50, reduction factor 3, as a search builds it) decides after each evaluation whether the
trial goes on; under `none` every trial runs to the end. Every evaluation reaches Optuna as an
intermediate value keyed by its step (`trial.report`), and a stopped trial is told PRUNED
after the value that stopped it, which is what a search should give its sampler.

Figures per sampler x scheduler, over sampler seeds: trials, and training steps, until a
full-length trial comes within the target of the table's best (only a trial that reached the
end counts: a search reports full-fidelity results), and how many of the sampler's proposals
were model-based (after its start-up trials), not random.

The target is the seed-noise floor: the standard deviation of final val_loss between training
seeds of one profile, relative to the mean, pooled over the reference run's three baselines
with three seeds each (0.84 % at cpu-s, 300 steps); a profile within it of the best cannot be
told from the best with one training seed. 0.2 % of the best (benchmark 4's tightest) is
printed too.

    python -m bench.bench_sampler_pruning                 # 4 samplers x 2 schedulers x 8 seeds x 40 trials
    python -m bench.bench_sampler_pruning --quick         # 3 seeds x 20 trials
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench._common import median, print_header, quartiles, save_result, table
from bench.bench_samplers import AXIS, TABLE_FILE, Table, make_sampler

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_RUN = ROOT / "runs" / "reference" / "quickstart"
SAMPLERS = ("tpe", "gp", "cmaes", "random")
SCHEDULERS = ("asha", "none")
GRACE, REDUCTION = 50, 3
STARTUP = {"tpe": 10, "gp": 10, "cmaes": 1, "random": 10**9}  # Optuna's defaults, as make_sampler builds them


@dataclass(frozen=True)
class Curves:
    """Per evaluation step, a table of the recorded val_loss at that step."""

    steps: tuple[int, ...]
    tables: tuple[Table, ...]

    def curve(self, a: float, b: float) -> list[float]:
        return [t(a, b) for t in self.tables]

    @property
    def final(self) -> Table:
        return self.tables[-1]


def load_curves(path: Path = TABLE_FILE) -> Curves:
    data = json.loads(path.read_text())
    train = data["train"]
    steps = tuple(range(train["eval_interval"], train["steps"] + 1, train["eval_interval"]))
    xs, ys = tuple(data["xs"]), tuple(data["ys"])
    at = {(p["a"], p["b"]): list(p["curve"][:-1]) + [p["val_loss"]] for p in data["points"]}  # final value exact
    tables = tuple(
        Table(xs=xs, ys=ys, values=tuple(tuple(float(at[(a, b)][j]) for b in ys) for a in xs))
        for j in range(len(steps))
    )
    return Curves(steps, tables)


def noise_floor(run_dir: Path = REFERENCE_RUN) -> float:
    """Pooled relative standard deviation of final val_loss across training seeds of one profile."""
    by_profile: dict[str, list[float]] = {}
    for line in (run_dir / "trials.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("full_fidelity") and r["kind"] in ("baseline", "verify"):
            key = json.dumps(r["profile"], sort_keys=True)
            by_profile.setdefault(key, []).append(float(r["metrics"]["val_loss"]))
    groups = [v for v in by_profile.values() if len(v) >= 2]
    pooled = sum((len(v) - 1) * statistics.variance(v) for v in groups) / sum(len(v) - 1 for v in groups)
    mean = statistics.fmean(x for v in groups for x in v)
    return math.sqrt(pooled) / mean


@dataclass(frozen=True)
class Run:
    finals: tuple[float | None, ...]  # final val_loss of each trial, None if stopped early
    steps: tuple[int, ...]  # steps each trial trained
    model_based: int  # trials proposed after the sampler's start-up


def run_study(curves: Curves, sampler: str, scheduler: str, seed: int, trials: int) -> Run:
    import optuna

    from tlmsearch.tuning.scheduler import BaselineKeepingASHA

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=make_sampler(sampler, seed, trials))
    max_t = curves.steps[-1]
    sched = (
        BaselineKeepingASHA(
            time_attr="step",
            metric="val_loss",
            mode="min",
            max_t=max_t,
            grace_period=GRACE,
            reduction_factor=REDUCTION,
            brackets=1,
            seed=seed,
        )  # fmt: skip
        if scheduler == "asha"
        else None
    )
    finals: list[float | None] = []
    used: list[int] = []
    lo, hi = AXIS
    for k in range(trials):
        trial = study.ask()
        a, b = trial.suggest_float("a", lo, hi), trial.suggest_float("b", lo, hi)
        fake = SimpleNamespace(trial_id=str(k), config={"number": k})
        if sched:
            sched.on_trial_add(None, fake)
        for step, value in zip(curves.steps, curves.curve(a, b), strict=True):
            trial.report(value, step)
            result = {"step": step, "val_loss": value}
            if step == max_t:
                study.tell(trial, value)
                finals.append(value)
                break
            if sched and sched.on_trial_result(None, fake, result) == "STOP":
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                finals.append(None)
                break
        used.append(step)
        if sched:
            sched.on_trial_complete(None, fake, result)
    completed_before = [sum(f is not None for f in finals[:k]) for k in range(trials)]
    startup = STARTUP[sampler]
    # TPE counts every finished trial (pruned ones too) toward its start-up; GP only complete ones
    seen = completed_before if sampler == "gp" else list(range(trials))
    return Run(tuple(finals), tuple(used), sum(n >= startup for n in seen))


def to_target(run: Run, target: float) -> tuple[int | None, int | None]:
    """(trials, steps) until the first full-length trial with final <= target; None if never."""
    steps = 0
    for k, (final, used) in enumerate(zip(run.finals, run.steps, strict=True), start=1):
        steps += used
        if final is not None and final <= target:
            return k, steps
    return None, None


def summary(values: Sequence[int | None], cap: int) -> dict[str, Any]:
    filled = [v if v is not None else cap + 1 for v in values]
    q25, q75 = quartiles(filled)
    return {"median": median(filled), "q25": q25, "q75": q75, "reached": sum(v is not None for v in values)}


def cell(s: dict[str, Any], cap: int, runs: int) -> str:
    m = f">{cap}" if s["median"] > cap else f"{s['median']:g}"
    return f"{m} [{s['q25']:g}-{s['q75']:g}] {s['reached']}/{runs}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samplers", default=",".join(SAMPLERS))
    ap.add_argument("--schedulers", default=",".join(SCHEDULERS))
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--quick", action="store_true", help="3 seeds x 20 trials")
    ap.add_argument("--out", default="", help="JSON output (default bench/data/sampler-pruning-latest.json)")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.trials = 3, 20
    info = print_header("bench_sampler_pruning: sampler x scheduler on the recorded curves of benchmark 4")
    curves = load_curves()
    floor = noise_floor()
    best = curves.final.best
    targets = {f"noise floor ({100 * floor:.2f}% of best)": best * (1 + floor), "0.2% of best": best * 1.002}
    print(f"table {TABLE_FILE.name}: steps {list(curves.steps)}, best final val_loss {best:.4f}; ASHA grace {GRACE}, "
          f"reduction factor {REDUCTION}; {args.seeds} sampler seeds x {args.trials} sequential trials")  # fmt: skip
    samplers = [s for s in args.samplers.split(",") if s]
    schedulers = [s for s in args.schedulers.split(",") if s]
    rows, out = [], []
    for sampler in samplers:
        for scheduler in schedulers:
            t0 = time.perf_counter()
            runs = [run_study(curves, sampler, scheduler, seed, args.trials) for seed in range(args.seeds)]
            steps_total = [sum(r.steps) for r in runs]
            entry: dict[str, Any] = {
                "sampler": sampler,
                "scheduler": scheduler,
                "full_length": median([sum(f is not None for f in r.finals) for r in runs]),
                "model_based": median([r.model_based for r in runs]),
                "steps_per_run": median(steps_total),
            }
            cells = [sampler, scheduler, f"{entry['full_length']:g}", f"{entry['model_based']:g}"]
            for name, target in targets.items():
                hits = [to_target(r, target) for r in runs]
                st = summary([h[0] for h in hits], args.trials)
                ss = summary([h[1] for h in hits], args.trials * curves.steps[-1])
                entry[name] = {"trials": st, "steps": ss}
                cells += [cell(st, args.trials, len(runs)), f"{ss['median']:g}" if st["median"] <= args.trials else "-"]
            out.append(entry)
            rows.append(cells)
            print(f"  {sampler} x {scheduler}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    headers = ["sampler", "scheduler", "full-length", "model-based"]
    for name in targets:
        headers += [f"trials to {name.split(' (')[0]} [IQR] reached", "steps (median)"]
    print()
    print(table(rows, headers))
    result = {"machine": info, "targets": targets, "noise_floor": floor, "seeds": args.seeds, "trials": args.trials,
              "results": out}  # fmt: skip
    print(f"\nfigures written to {save_result('sampler-pruning', result, args.out or None)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
