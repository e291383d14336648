"""Benchmark 5b: sampler x scheduler on real short searches (real Ray, real training).

Benchmark 5 replays recorded curves; this one runs the search engine itself
(`tlmsearch.search`) at a small shape: preset `cpu-xs` (Transformer, d 64, 6 layers, seq 128,
base width 192), the default `taper` space, the 4 default baselines first, `--steps` steps
with an evaluation every `--eval-interval`, `--trials` trials per search (baselines included),
1 thread per trial, 2 trials at once. For every sampler x scheduler and every search seed
(the seed is the sampler's and every trial's training seed) one search is run; GP and CMA-ES
with `asha` are refused by the tool (`check_sampler_scheduler`) and reported as refused.

Within one seed, training is deterministic (1 thread, one training seed for all trials), so
every search of that seed would give a profile the same val_loss: the best full-fidelity
val_loss over all searches of the seed is the "best profile" each search is measured against.
Figures per search: the best val_loss it reached (full fidelity), and the number of trials
(in Optuna trial order, baselines included) until a full-fidelity trial came within the
noise floor of that best. The noise floor is measured here, at this shape: the pooled
relative standard deviation of the baselines' final val_loss across the search seeds (every
search trains the 4 baselines at its seed; baselines are never stopped early).

    python -m bench.bench_sampler_search                        # 2 seeds x 6 searches (~20-45 min)
    python -m bench.bench_sampler_search --seeds 1 --trials 8   # shorter
    python -m bench.bench_sampler_search --analyse bench/data/sampler-search-trials.jsonl
    python -m bench.bench_sampler_search --dry                  # smoke test: tiny model, no figures

Each finished search appends its trials to `--log` (JSONL), so a long run that is stopped
keeps what it measured; `--analyse` prints the table again from that file.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._common import DATA_DIR, print_header, save_result, table

COMBOS: tuple[tuple[str, str], ...] = tuple(
    (s, sch) for s in ("tpe", "random", "gp", "cmaes") for sch in ("asha", "none")
)
LOG = DATA_DIR / "sampler-search-trials.jsonl"


@dataclass(frozen=True)
class Trial:
    """What the figures need from one trial of one search."""

    seed: int
    sampler: str
    scheduler: str
    number: int  # Optuna trial number: the order the sampler proposed it
    kind: str  # baseline | sampled
    key: str  # the profile, canonical JSON
    steps: int
    full: bool
    val_loss: float  # final (full) or last (stopped); nan when none


def trial_from_record(r: Any, seed: int, sampler: str, scheduler: str) -> Trial:
    return Trial(
        seed=seed,
        sampler=sampler,
        scheduler=scheduler,
        number=int(r.number),
        kind=str(r.kind),
        key=json.dumps(r.profile, sort_keys=True),
        steps=int(r.steps),
        full=bool(r.full_fidelity),
        val_loss=float(r.metrics.get("val_loss", math.nan)),
    )


# ----------------------------------------------------------------------------- analysis (pure)


def noise_floor(trials: Sequence[Trial]) -> tuple[float, int]:
    """(pooled relative sd of baseline val_loss across seeds, degrees of freedom); nan when < 2 seeds.

    Each (baseline, seed) value is taken once (every search of a seed trains the same baseline
    identically; the first record is used).
    """
    per: dict[str, dict[int, float]] = {}
    for t in trials:
        if t.kind == "baseline" and t.full and math.isfinite(t.val_loss):
            per.setdefault(t.key, {}).setdefault(t.seed, t.val_loss)
    groups = [list(v.values()) for v in per.values() if len(v) >= 2]
    dof = sum(len(g) - 1 for g in groups)
    if not dof:
        return math.nan, 0
    pooled = sum((len(g) - 1) * statistics.variance(g) for g in groups) / dof
    mean = statistics.fmean(x for g in groups for x in g)
    return math.sqrt(pooled) / mean, dof


def best_per_seed(trials: Sequence[Trial]) -> dict[int, float]:
    """The best full-fidelity val_loss over every search of each seed."""
    out: dict[int, float] = {}
    for t in trials:
        if t.full and math.isfinite(t.val_loss):
            out[t.seed] = min(out.get(t.seed, math.inf), t.val_loss)
    return out


def trials_to(trials: Sequence[Trial], target: float, sampled_only: bool = False) -> int | None:
    """How many trials (in trial-number order, baselines counted) until a full-fidelity one
    (a sampled one, with `sampled_only`) is <= target; None if never."""
    for k, t in enumerate(sorted(trials, key=lambda t: t.number), start=1):
        if t.full and t.val_loss <= target and (t.kind == "sampled" or not sampled_only):
            return k
    return None


def summarise(trials: Sequence[Trial], floor: float) -> list[dict[str, Any]]:
    """One row per (sampler, scheduler, seed) search: best reached, trials to the floor, steps."""
    best = best_per_seed(trials)
    searches: dict[tuple[str, str, int], list[Trial]] = {}
    for t in trials:
        searches.setdefault((t.sampler, t.scheduler, t.seed), []).append(t)
    rows = []
    for (sampler, scheduler, seed), ts in sorted(searches.items()):
        full = [t.val_loss for t in ts if t.full and math.isfinite(t.val_loss)]
        mine = min(full) if full else math.nan
        rows.append(
            {
                "sampler": sampler,
                "scheduler": scheduler,
                "seed": seed,
                "trials": len(ts),
                "full_fidelity": len(full),
                "steps": sum(t.steps for t in ts),
                "best_val_loss": mine,
                "best_of_seed": best[seed],
                "gap_pct": 100 * (mine / best[seed] - 1) if full else math.nan,
                "to_floor": trials_to(ts, best[seed] * (1 + floor)) if math.isfinite(floor) else None,
                "sampled_to_floor": trials_to(ts, best[seed] * (1 + floor), True) if math.isfinite(floor) else None,
                "best_is_baseline": bool(full)
                and any(t.kind == "baseline" and t.full and t.val_loss == mine for t in ts),
            }
        )
    return rows


# ----------------------------------------------------------------------------- searches


def search_config(args: argparse.Namespace, sampler: str, scheduler: str, seed: int, runs_dir: str) -> Any:
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.core.base import DataConfig, TrainConfig

    if args.dry:
        model = {"d_model": 32, "n_layers": 4, "n_heads": 2, "seq_len": 32, "base_width": 64, "multiple_of": 8}
        train = TrainConfig(steps=12, eval_interval=3, warmup_steps=2, batch_size=4, eval_windows=4, threads=1)
        corpus, preset = "pydoc", "cpu-xs"
    else:
        model, corpus, preset = {}, args.corpus, "cpu-xs"
        train = TrainConfig(
            steps=args.steps, eval_interval=args.eval_interval, warmup_steps=10, eval_windows=32, threads=1
        )
    return SearchConfig(
        name=f"ss-{sampler}-{scheduler}-{seed}",
        runs_dir=runs_dir,
        preset=preset,
        model=model,
        space=args.space,
        sampler=sampler,
        scheduler=scheduler,
        seed=seed,
        trials=args.trials,
        **({"noise_seeds": 0} if args.dry else {}),  # a smoke test measures no noise floor
        max_concurrent=1 if args.dry else 2,  # a smoke test: one Ray worker, one start-up
        cpus_per_trial=1.0,
        train=train,
        data=DataConfig(corpus=corpus),
    )


def run_search(args: argparse.Namespace, sampler: str, scheduler: str, seed: int, runs_dir: str) -> list[Trial]:
    from tlmsearch.tuning import search

    cfg = search_config(args, sampler, scheduler, seed, runs_dir)
    study = search(cfg, progress=False)
    records = [r for r in study.records if r.kind in ("baseline", "sampled")]
    failed = [r.reason for r in records if r.status == "failed"]
    if failed:
        raise RuntimeError(f"{sampler} x {scheduler} seed {seed}: trials failed: {failed}")
    return [trial_from_record(r, seed, sampler, scheduler) for r in records]


def refusal(sampler: str, scheduler: str) -> str | None:
    """The tool's one-line refusal of this combination, or None when it is allowed."""
    from tlmsearch.configs.search import SearchConfig, check_sampler_scheduler
    from tlmsearch.errors import ConfigError

    try:
        check_sampler_scheduler(SearchConfig(sampler=sampler, scheduler=scheduler))
    except ConfigError as e:
        return str(e)
    return None


def load_log(path: Path) -> list[Trial]:
    return [Trial(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def report(trials: Sequence[Trial], refused: dict[str, str]) -> dict[str, Any]:
    floor, dof = noise_floor(trials)
    source = f"pooled relative sd of the baselines across the search seeds, {dof} degrees of freedom"
    if not dof:  # one seed: the reference run's floor (cpu-s, 300 steps; benchmark 5)
        from bench.bench_sampler_pruning import noise_floor as reference_floor

        floor, source = reference_floor(), "one search seed only: the reference run's floor (cpu-s, 300 steps)"
    rows = summarise(trials, floor)
    print(f"\nnoise floor {100 * floor:.2f}% ({source})")
    for seed, best in sorted(best_per_seed(trials).items()):
        print(f"seed {seed}: best full-fidelity val_loss over all its searches {best:.4f}")
    cells = []
    for r in rows:
        to = r["to_floor"]
        cells.append([r["sampler"], r["scheduler"], r["seed"], r["trials"], r["full_fidelity"], r["steps"],
                      f"{r['best_val_loss']:.4f}", f"{r['gap_pct']:+.2f}%",
                      "baseline" if r["best_is_baseline"] else "sampled",
                      to if to is not None else f">{r['trials']}",
                      r["sampled_to_floor"] if r["sampled_to_floor"] is not None else f">{r['trials']}"])  # fmt: skip
    print(table(cells, ["sampler", "scheduler", "seed", "trials", "full", "steps", "best val_loss",
                        "vs best of seed", "best is", "trials to floor", "to a sampled one"]))  # fmt: skip
    for combo, msg in refused.items():
        print(f"{combo}: refused: {msg}")
    return {"noise_floor": floor, "noise_floor_source": source, "rows": rows, "refused": refused}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=2, help="search seeds 0..N-1")
    ap.add_argument("--trials", type=int, default=12, help="trials per search, the 4 baselines included")
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--eval-interval", type=int, default=25)
    ap.add_argument("--space", default="taper")
    ap.add_argument("--corpus", default="shakespeare")
    ap.add_argument("--combos", default=",".join(f"{s}x{c}" for s, c in COMBOS), help="sampler x scheduler list")
    ap.add_argument("--log", default=str(LOG), help="JSONL of every trial, appended after each search")
    ap.add_argument("--analyse", default="", help="print the table from a trials JSONL and exit")
    ap.add_argument("--dry", action="store_true", help="tiny model, a few steps: a smoke test, not a measurement")
    ap.add_argument("--out", default="", help="JSON figures (default bench/data/sampler-search-latest.json)")
    args = ap.parse_args(argv)
    combos = [tuple(c.split("x", 1)) for c in args.combos.split(",") if c]
    refused = {f"{s} x {c}": m for s, c in combos if (m := refusal(s, c))}
    if args.analyse:
        result = report(load_log(Path(args.analyse)), refused)
        if args.out:
            print(f"figures written to {save_result('sampler-search', {'log': args.analyse, **result}, args.out)}")
        return 0
    info = print_header("bench_sampler_search: sampler x scheduler on real short searches")
    import ray

    log = Path(args.log)
    trials: list[Trial] = []
    walls: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ss-") as tmp:
        try:
            for seed in range(args.seeds):
                for sampler, scheduler in combos:
                    if f"{sampler} x {scheduler}" in refused:
                        continue
                    t0 = time.perf_counter()
                    got = run_search(args, sampler, scheduler, seed, tmp)
                    walls[f"{sampler} x {scheduler} seed {seed}"] = wall = time.perf_counter() - t0
                    trials += got
                    if not args.dry:
                        with log.open("a") as f:
                            f.writelines(json.dumps(t.__dict__) + "\n" for t in got)
                    print(f"  seed {seed} {sampler} x {scheduler}: {len(got)} trials, "
                          f"{sum(t.steps for t in got)} steps, {wall:.0f} s", file=sys.stderr, flush=True)  # fmt: skip
        finally:
            ray.shutdown()
    result = report(trials, refused)
    if not args.dry or args.out:
        out = {"machine": info, "argv": sys.argv[1:], "walls": walls, **result,
               "config": search_config(args, "tpe", "asha", 0, "runs").to_dict()}  # fmt: skip
        print(f"figures written to {save_result('sampler-search', out, args.out or None)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
