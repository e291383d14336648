"""Benchmark 4: sampler efficiency, replayed on a recorded table of real trial results.

How many trials do the tool's samplers (TPE, GP, CMA-ES, QMC, random; built exactly as a
search builds them) need before the best value found comes within x % of the best known
value? Each sampler runs an Optuna study on a 2-D width-profile space over several sampler
seeds; medians and quartiles of "trials to target" are printed.

The objective is real but replayed, so the benchmark is cheap and exact: `--record` trains the
small bench model (6 layers, d 64) once for every point of a 5 x 5 grid of the space and
saves the final val_loss of each in `bench/data/sampler_table.json` (with the command and the
environment); the replay objective is the bilinear interpolation of that table (in the
space's coordinates), whose minimum is the table's best value, reached at a grid point.

The 2-D space ("knots3"): three knots at depths 0, 1/2, 1 joined by a monotone cubic, the
middle one fixed at 1, the first at 2**a and the last at 2**b (a, b in [-2, 2]); the budget
projection keeps the total. a > 0 > b tapers (the paper's direction), a < 0 < b expands,
a = b < 0 is middle-heavy, a = b > 0 an hourglass. Every trial of a search uses the same
training seed, so a search sees one fixed value per profile, as this table does.

    python -m bench.bench_samplers                  # replay (about a minute)
    python -m bench.bench_samplers --quick          # fewer seeds and trials (seconds)
    python -m bench.bench_samplers --record         # re-record the table (real training, minutes)
    python -m bench.bench_samplers --dry --quick    # synthetic table, no data file (smoke test)
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._common import (
    DATA_DIR,
    SMALL_SHAPE,
    median,
    print_header,
    quartiles,
    save_result,
    small_preset,
    table,
)

TABLE_FILE = DATA_DIR / "sampler_table.json"
SAMPLERS = ("tpe", "gp", "cmaes", "qmc", "random")
AXIS = (-2.0, 2.0)
GRID_POINTS = 5
# tolerances: relative to the best value (as asked), and as a share of the table's range
# above the best (scale-free: 10 % of the way from the best to the worst value)
REL_TARGETS = (0.01, 0.005, 0.002)
RANGE_TARGETS = (0.10, 0.02)
RECORD_TRAIN = {
    "steps": 200,
    "batch_size": 16,
    "lr": 3e-3,
    "warmup_steps": 20,
    "eval_interval": 50,
    "eval_windows": 256,
    "seed": 0,
    "threads": 1,
}


# ----------------------------------------------------------------------------- the space


def knots3(a: float, b: float) -> Any:
    """The ProfileSpec of grid coordinates (a, b): knots 2**a, 1, 2**b (pchip)."""
    from tlmsearch.profiles import ProfileSpec

    return ProfileSpec(
        family="knots", params={"k0": 2.0**a, "k1": 1.0, "k2": 2.0**b, "mode": "free", "interp": "pchip"}
    )


def grid_axis(points: int = GRID_POINTS, bounds: tuple[float, float] = AXIS) -> list[float]:
    lo, hi = bounds
    return [round(lo + (hi - lo) * i / (points - 1), 6) for i in range(points)]


# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Table:
    """Values on a rectangular grid `values[i][j]` at (xs[i], ys[j]), interpolated bilinearly."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]
    values: tuple[tuple[float, ...], ...]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Table:
        return cls(
            xs=tuple(data["xs"]), ys=tuple(data["ys"]), values=tuple(tuple(float(v) for v in r) for r in data["values"])
        )

    @property
    def best(self) -> float:
        return min(min(r) for r in self.values)

    @property
    def worst(self) -> float:
        return max(max(r) for r in self.values)

    def argbest(self) -> tuple[float, float]:
        i, j = min(
            ((i, j) for i in range(len(self.xs)) for j in range(len(self.ys))), key=lambda ij: self.values[ij[0]][ij[1]]
        )
        return self.xs[i], self.ys[j]

    def __call__(self, x: float, y: float) -> float:
        i, tx = _locate(self.xs, x)
        j, ty = _locate(self.ys, y)
        v = self.values
        return (
            (1 - tx) * (1 - ty) * v[i][j]
            + tx * (1 - ty) * v[i + 1][j]
            + (1 - tx) * ty * v[i][j + 1]
            + tx * ty * v[i + 1][j + 1]
        )


def _locate(axis: Sequence[float], x: float) -> tuple[int, float]:
    """Cell index i and position t in [0, 1] of x between axis[i] and axis[i + 1] (clamped)."""
    x = min(max(x, axis[0]), axis[-1])
    i = min(max(bisect.bisect_right(axis, x) - 1, 0), len(axis) - 2)
    return i, (x - axis[i]) / (axis[i + 1] - axis[i])


def synthetic_table(points: int = GRID_POINTS) -> Table:
    """A smooth stand-in with one valley (for --dry and the tests; not a measurement)."""
    axis = grid_axis(points)
    values = tuple(
        tuple(2.3 + 0.03 * (a - 1.0) ** 2 + 0.05 * (b + 0.7) ** 2 + 0.01 * a * b for b in axis) for a in axis
    )
    return Table(xs=tuple(axis), ys=tuple(axis), values=values)


def load_table(path: Path = TABLE_FILE) -> tuple[Table, dict[str, Any]]:
    data = json.loads(path.read_text())
    if not data.get("complete"):
        raise SystemExit(f"{path} is a partial recording; finish it with --record")
    return Table.from_dict(data), data


# ----------------------------------------------------------------------------- replay


def trials_to_target(values: Sequence[float], target: float) -> int | None:
    """1-based number of the first trial whose value is <= target; None if none is."""
    for n, v in enumerate(values, start=1):
        if v <= target:
            return n
    return None


def make_sampler(name: str, seed: int, trials: int) -> Any:
    """The sampler exactly as `tlmsearch.search` builds it for `SearchConfig(sampler=name, seed=seed)`."""
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.tuning.searcher import make_sampler as engine_sampler

    return engine_sampler(SearchConfig(sampler=name, seed=seed, trials=trials))


def run_sampler(objective: Callable[[float, float], float], sampler: str, seed: int, trials: int) -> list[float]:
    """Values of `trials` sequential trials of one Optuna study on the 2-D space, in order."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=make_sampler(sampler, seed, trials))
    lo, hi = AXIS

    def f(trial: Any) -> float:
        return objective(trial.suggest_float("a", lo, hi), trial.suggest_float("b", lo, hi))

    study.optimize(f, n_trials=trials)
    return [t.value for t in study.trials]


@dataclass(frozen=True)
class Summary:
    sampler: str
    target: str
    reached: int  # runs that reached the target
    runs: int
    median: float  # trials to target; runs that never reached it count as trials + 1
    q25: float
    q75: float
    lo: int
    hi: int


def summarize(sampler: str, target: str, counts: Sequence[int | None], trials: int) -> Summary:
    filled = [c if c is not None else trials + 1 for c in counts]
    q25, q75 = quartiles(filled)
    return Summary(
        sampler=sampler,
        target=target,
        reached=sum(c is not None for c in counts),
        runs=len(counts),
        median=median(filled),
        q25=q25,
        q75=q75,
        lo=min(filled),
        hi=max(filled),
    )


def targets_for(tab: Table) -> dict[str, float]:
    out = {f"{100 * r:g}% of best": tab.best * (1 + r) for r in REL_TARGETS}
    out.update({f"{100 * r:g}% of range": tab.best + r * (tab.worst - tab.best) for r in RANGE_TARGETS})
    return out


def replay(
    tab: Table, samplers: Sequence[str], seeds: int, trials: int, log: Callable[[str], None] = print
) -> dict[str, Any]:
    targets = targets_for(tab)
    summaries: list[Summary] = []
    runs: dict[str, list[list[float]]] = {}
    for s in samplers:
        t0 = time.perf_counter()
        runs[s] = [run_sampler(tab, s, seed, trials) for seed in range(seeds)]
        log(f"  {s}: {seeds} seeds x {trials} trials in {time.perf_counter() - t0:.1f} s")
        for name, target in targets.items():
            summaries.append(summarize(s, name, [trials_to_target(v, target) for v in runs[s]], trials))
    return {"targets": targets, "summaries": [vars(x) for x in summaries], "trials": trials, "seeds": seeds}


def speedup_cell(random_median: float, median: float, trials: int) -> str:
    """random's median / this sampler's median; '>' when random never got there, '-' when this did not."""
    if median > trials:
        return "-"
    if random_median > trials:
        return f">{random_median / median:.2f}"
    return f"{random_median / median:.2f}"


def median_cell(median: float, trials: int) -> str:
    return f">{trials}" if median > trials else f"{median:g}"


def print_replay(result: dict[str, Any]) -> None:
    trials = result["trials"]
    by_target: dict[str, list[dict[str, Any]]] = {}
    for s in result["summaries"]:
        by_target.setdefault(s["target"], []).append(s)
    for target, rows in by_target.items():
        random_median = next((s["median"] for s in rows if s["sampler"] == "random"), math.nan)
        print(
            f"\ntrials to reach val_loss <= {result['targets'][target]:.4f} ({target}); median over "
            f"{rows[0]['runs']} sampler seeds; a run that never reaches it within {trials} trials counts {trials + 1}"
        )
        print(table(
            [[s["sampler"], median_cell(s["median"], trials), f"{s['q25']:g}-{s['q75']:g}", f"{s['lo']}-{s['hi']}",
              f"{s['reached']}/{s['runs']}", speedup_cell(random_median, s["median"], trials)] for s in rows],
            ["sampler", "median", "IQR", "min-max", "reached", "random/this"],
        ))  # fmt: skip


# ----------------------------------------------------------------------------- recording


def _record_point(args: tuple[float, float, dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    """One real training run at grid point (a, b) (runs in a worker process, one thread)."""
    import torch

    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.training.trainer import train

    a, b, train_kw, data_kw = args
    torch.set_num_threads(int(train_kw.get("threads", 1)))
    p = small_preset()
    widths = knots3(a, b).widths(p.budget())
    t0 = time.perf_counter()
    result = train(p.model_config("transformer", widths), TrainConfig(**train_kw), DataConfig(**data_kw))
    return {
        "a": a,
        "b": b,
        "widths": list(widths),
        "val_loss": result.metrics["val_loss"],
        "curve": [round(c["val_loss"], 5) for c in result.curve],
        "wall_s": round(time.perf_counter() - t0, 2),
    }


def record(path: Path, points: int, workers: int, steps: int | None) -> None:
    """Train every grid point (resuming a partial file) and write the table as it fills."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from tlmsearch.core.base import DataConfig
    from tlmsearch.data import prepare
    from tlmsearch.rundir import environment

    train_kw = dict(RECORD_TRAIN, **({"steps": steps} if steps else {}))
    data_kw = {"corpus": "shakespeare"}
    axis = grid_axis(points)
    data: dict[str, Any] = {}
    if path.exists():
        data = json.loads(path.read_text())
        if data.get("train") != train_kw or data.get("data") != data_kw:
            data = {}  # different training: start over
    # points already trained with this training config and lying on this grid are kept
    done = {(p["a"], p["b"]): p for p in data.get("points", []) if p["a"] in axis and p["b"] in axis}
    data = {
        "description": "final val_loss of real training runs on a grid of the 2-D 'knots3' width-profile space "
        "(bench/bench_samplers.py)",
        "command": "python -m bench.bench_samplers " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "environment": environment(seeds={"seed": train_kw["seed"]}),
        "model": {"arch": "transformer", **SMALL_SHAPE, "vocab_size": 256},
        "space": "k0=2**a, k1=1, k2=2**b at depths 0, 1/2, 1 (knots family, pchip); a = xs, b = ys",
        "train": train_kw,
        "data": data_kw,
        "xs": axis,
        "ys": axis,
        "complete": False,
        "points": list(done.values()),
    }
    prepare(DataConfig(**data_kw))  # tokenize once, before the workers start
    todo = [(a, b) for a in axis for b in axis if (a, b) not in done]
    print(f"recording {len(todo)} of {points * points} grid points with {workers} worker(s) ...", flush=True)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(_record_point, (a, b, train_kw, data_kw)) for a, b in todo]
        for n, fut in enumerate(as_completed(futures), start=1):
            point = fut.result()
            data["points"].append(point)
            _write(path, data)
            print(f"  [{n}/{len(todo)}] a={point['a']:+.2f} b={point['b']:+.2f} widths={point['widths']} "
                  f"val_loss={point['val_loss']:.4f} ({point['wall_s']:.0f} s)", flush=True)  # fmt: skip
    by = {(p["a"], p["b"]): p["val_loss"] for p in data["points"]}
    data["values"] = [[by[(a, b)] for b in axis] for a in axis]
    data["complete"] = True
    data["record_wall_s"] = round(time.perf_counter() - t0, 1)
    _write(path, data)
    print(f"wrote {path}")


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--record", action="store_true", help="re-record the table with real training runs")
    ap.add_argument("--grid", type=int, default=GRID_POINTS, help="grid points per axis when recording")
    ap.add_argument("--workers", type=int, default=2, help="training processes when recording (1 thread each)")
    ap.add_argument("--steps", type=int, default=0, help="training steps per point when recording (0 = default)")
    ap.add_argument("--table", type=Path, default=TABLE_FILE)
    ap.add_argument("--samplers", default=",".join(SAMPLERS))
    ap.add_argument("--seeds", type=int, default=10, help="sampler seeds per sampler")
    ap.add_argument("--trials", type=int, default=50, help="trials per study")
    ap.add_argument("--quick", action="store_true", help="3 seeds x 20 trials")
    ap.add_argument("--dry", action="store_true", help="replay a synthetic table (no measurement; smoke test)")
    ap.add_argument(
        "--out", default="", help="write the figures as JSON here (default bench/data/samplers-latest.json)"
    )
    args = ap.parse_args(argv)

    info = print_header("bench_samplers: trials each sampler needs to come within x% of the best value")
    if args.record:
        record(args.table, args.grid, args.workers, args.steps or None)
        return 0
    if args.quick:
        args.seeds, args.trials = 3, 20
    samplers = [s.strip() for s in args.samplers.split(",") if s.strip()]
    if args.dry:
        tab, meta = synthetic_table(), {"description": "synthetic (--dry): not a measurement"}
    else:
        tab, meta = load_table(args.table)
    a, b = tab.argbest()
    print(f"table: {meta['description']}")
    if "train" in meta:
        print(f"  recorded with: {meta.get('command')} ({meta['train']['steps']} steps per point, "
              f"{len(tab.xs)}x{len(tab.ys)} grid)")  # fmt: skip
    print(f"  best val_loss {tab.best:.4f} at a={a:+.2f} b={b:+.2f}; worst {tab.worst:.4f}; "
          f"replay objective = bilinear interpolation of the table")  # fmt: skip
    result = replay(tab, samplers, args.seeds, args.trials)
    print_replay(result)
    result.update(machine=info, table=str(args.table) if not args.dry else "synthetic", argv=sys.argv[1:])
    if not args.dry or args.out:
        print(f"\nfigures written to {save_result('samplers', result, args.out or None)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
