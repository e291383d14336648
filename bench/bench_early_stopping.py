"""Benchmark 3: early-stopping savings of ASHA against no early stopping.

Two real searches with the same sampler and sampler seed and the same budget of trials (the
small search model, the `knots` space, the tool's default 300 steps with an evaluation every
50, 2 one-thread trials at once) differ only in the scheduler: `asha` or `none`. Printed:
the total training steps each spent and their ratio (goal >= 2.5x fewer with ASHA), and
whether ASHA's best profile is the true best (top-5 agreement).

With the default `random` sampler both searches train exactly the same sequence of profiles
(a random sampler ignores results), and training is deterministic (one training seed for all
trials), so the search without early stopping is the ground truth for every profile ASHA saw:
the benchmark reports how many of the true top 5 ASHA carried to full fidelity, whether its
best is the true best, and the regret (true val_loss of ASHA's pick minus the true best). With
`--sampler tpe` (adaptive: the two searches see different profiles) only the best values of
the two searches are compared.

    python -m bench.bench_early_stopping           # 16 trials of 300 steps each way (~6 min)
    python -m bench.bench_early_stopping --quick   # 8 trials of 150 steps (~2 min)
    python -m bench.bench_early_stopping --dry     # tiny model, a few steps (smoke test, no figures)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench._common import SMALL_SHAPE, print_header, save_result, table

GOAL = 2.5
TOP = 5


@dataclass(frozen=True)
class Trial:
    """What the comparison needs from a trial record."""

    key: str  # the profile, canonical JSON
    steps: int
    full: bool  # reached the full number of steps
    val_loss: float  # final (full) or last (stopped) validation loss; nan when none


def from_record(r: Any) -> Trial:
    return Trial(
        key=json.dumps(r.profile, sort_keys=True),
        steps=int(r.steps),
        full=bool(r.full_fidelity),
        val_loss=float(r.metrics.get("val_loss", math.nan)),
    )


def top(trials: Sequence[Trial], k: int = TOP) -> list[Trial]:
    """The k best full-fidelity trials by val_loss."""
    full = [t for t in trials if t.full and math.isfinite(t.val_loss)]
    return sorted(full, key=lambda t: t.val_loss)[:k]


def compare(none: Sequence[Trial], asha: Sequence[Trial], k: int = TOP) -> dict[str, Any]:
    """Steps spent and agreement of the best profiles between the two searches."""
    steps_none, steps_asha = sum(t.steps for t in none), sum(t.steps for t in asha)
    top_none, top_asha = top(none, k), top(asha, k)
    out: dict[str, Any] = {
        "trials": [len(none), len(asha)],
        "steps_none": steps_none,
        "steps_asha": steps_asha,
        "steps_ratio": steps_none / steps_asha if steps_asha else math.nan,
        "full_fidelity": [sum(t.full for t in none), sum(t.full for t in asha)],
        "best_none": top_none[0].val_loss if top_none else math.nan,
        "best_asha": top_asha[0].val_loss if top_asha else math.nan,
    }
    truth = {t.key: t.val_loss for t in none if t.full}
    matched = [t for t in asha if t.key in truth]
    out["same_profiles"] = len(matched) == len(asha) == len(none)
    if out["same_profiles"] and top_asha and top_none:
        # ground truth for every profile: how good are ASHA's picks really?
        true_top = [t.key for t in top_none]
        out["same_best"] = top_asha[0].key == top_none[0].key
        out["top_overlap"] = len({t.key for t in top_asha} & set(true_top))
        out["true_rank_of_asha_best"] = 1 + sorted(truth.values()).index(truth[top_asha[0].key])
        out["regret"] = truth[top_asha[0].key] - top_none[0].val_loss
        full_asha = [t for t in asha if t.full]
        ranking = sorted(truth, key=lambda key: truth[key])
        out["true_ranks_of_asha_full"] = sorted(1 + ranking.index(t.key) for t in full_asha)
        out["max_abs_diff_same_trial"] = max((abs(t.val_loss - truth[t.key]) for t in full_asha), default=0.0)
    else:
        out["regret"] = out["best_asha"] - out["best_none"]
    out["regret_pct"] = 100 * out["regret"] / out["best_none"] if out["best_none"] else math.nan
    return out


# ----------------------------------------------------------------------------- searches


def search_config(args: argparse.Namespace, scheduler: str, runs_dir: str) -> Any:
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.tuning import SearchConfig

    if args.dry:
        shape = {"d_model": 32, "n_layers": 4, "n_heads": 2, "seq_len": 32, "base_width": 64, "multiple_of": 8}
        train = TrainConfig(steps=12, eval_interval=2, warmup_steps=2, batch_size=4, eval_windows=4)
        corpus, trials = "pydoc", 6
    elif args.quick:
        shape, corpus, trials = dict(SMALL_SHAPE), args.corpus, 8
        train = TrainConfig(steps=150, eval_interval=25, warmup_steps=10, batch_size=16, eval_windows=64)
    else:
        shape, corpus, trials = dict(SMALL_SHAPE), args.corpus, args.trials
        train = TrainConfig(steps=300, eval_interval=50, warmup_steps=20, batch_size=16, eval_windows=64)
    return SearchConfig(
        name=f"es-{scheduler}",
        runs_dir=runs_dir,
        preset="cpu-s",
        model=shape,
        space=args.space,
        sampler=args.sampler,
        seed=args.seed,
        scheduler=scheduler,
        trials=trials,
        # a smoke test: no noise floor, one trial (one Ray worker, one start-up) at a time
        **({"noise_seeds": 0, "max_concurrent": 1} if args.dry else {}),
        cpus_per_trial=1.0,
        train=train,
        data=DataConfig(corpus=corpus),
    )


def run(args: argparse.Namespace, scheduler: str, runs_dir: str) -> tuple[list[Trial], float, Any]:
    from tlmsearch.tuning import search

    cfg = search_config(args, scheduler, runs_dir)
    t0 = time.perf_counter()
    study = search(cfg, progress=False)
    wall = time.perf_counter() - t0
    records = [r for r in study.records if r.kind in ("baseline", "sampled")]
    failed = [r.reason for r in records if r.status == "failed"]
    if failed:
        raise RuntimeError(f"{scheduler}: trials failed: {failed}")
    return [from_record(r) for r in records], wall, cfg


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=16, help="trials per search (baselines included)")
    ap.add_argument("--sampler", default="random", help="sampler of both searches (random: identical profiles)")
    ap.add_argument("--space", default="knots")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="8 trials of 150 steps (evaluation every 25)")
    ap.add_argument("--dry", action="store_true", help="tiny model, a few steps: a smoke test, not a measurement")
    ap.add_argument("--corpus", default="shakespeare")
    ap.add_argument(
        "--out", default="", help="JSON file for the figures (default bench/data/early-stopping-latest.json)"
    )
    args = ap.parse_args(argv)

    info = print_header("bench_early_stopping: ASHA vs no early stopping, same sampler seed and trial budget")
    import ray

    walls: dict[str, float] = {}
    trials: dict[str, list[Trial]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-es-") as tmp:
        try:
            for scheduler in ("none", "asha"):
                trials[scheduler], walls[scheduler], cfg = run(args, scheduler, tmp)
                steps = sum(t.steps for t in trials[scheduler])
                print(f"  {scheduler}: {len(trials[scheduler])} trials, {steps} steps, {walls[scheduler]:.0f} s")
        finally:
            ray.shutdown()
    result = compare(trials["none"], trials["asha"])
    result["wall_ratio"] = walls["none"] / walls["asha"]
    print(f"\n{cfg.trials} trials, sampler {cfg.sampler} seed {cfg.seed}, space {cfg.space}, {cfg.train.steps} steps "
          f"(evaluation every {cfg.train.eval_interval}), ASHA reduction factor {cfg.reduction_factor}, "
          f"grace {cfg.grace} steps")  # fmt: skip
    rows = [
        ["training steps", result["steps_none"], result["steps_asha"], result["steps_ratio"]],
        ["wall s", walls["none"], walls["asha"], result["wall_ratio"]],
        ["full-fidelity trials", *result["full_fidelity"], ""],
        ["best val_loss", result["best_none"], result["best_asha"], ""],
    ]
    print(table(rows, ["", "none", "asha", "none/asha"]))
    met = "met" if result["steps_ratio"] >= GOAL else "NOT met"
    verdict = f"steps ratio {result['steps_ratio']:.2f} (goal >= {GOAL}: {met})"
    if "same_best" in result:
        print(f"same profiles in both searches; ASHA's best is the true #{result['true_rank_of_asha_best']} "
              f"(same best: {result['same_best']}), {result['top_overlap']}/{TOP} of the true top {TOP} reached "
              f"full fidelity under ASHA, regret {result['regret']:+.4f} nats ({result['regret_pct']:+.2f}%); "
              f"same-trial val_loss differs by at most {result['max_abs_diff_same_trial']:.1e} "
              "between the runs")  # fmt: skip
        print(f"true ranks of the trials ASHA carried to full fidelity: {result['true_ranks_of_asha_full']}")
    else:
        print(f"best val_loss ASHA - none: {result['regret']:+.4f} nats ({result['regret_pct']:+.2f}%)")
    print(verdict)
    if not args.dry or args.out:
        out = {"machine": info, "result": result, "walls": walls, "config": cfg.to_dict(), "argv": sys.argv[1:]}
        print(f"figures written to {save_result('early-stopping', out, args.out or None)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
