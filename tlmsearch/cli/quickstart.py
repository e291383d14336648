"""`tlmsearch quickstart`: the whole loop in one command, small enough for a first look.

search (the four baselines first, then sampled profiles, ASHA early stopping) -> verify (the
best profile and the baselines re-trained with fresh seeds) -> report, on the embedded
Shakespeare corpus with the `cpu-xs` shape (6 layers: enough depth for cosine, linear, grouped
and expanding profiles to differ, small enough for a 2-core laptop). It calls the public
Python API only (`tlmsearch.search`, `tlmsearch.verify`, `tlmsearch.write_report`), so it is
also the shortest worked example of that API.

The numbers are short-trial numbers on a small model: the verdict's interval is wide and the
README says so; the real job is `tlmsearch search ... --preset cpu-s` (see the README).
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from typing import TYPE_CHECKING

from tlmsearch.errors import UserError

if TYPE_CHECKING:
    from tlmsearch.configs.base import DataConfig
    from tlmsearch.configs.search import SearchConfig

HELP = "run the whole loop (search with baselines, verify, report) on a small model in minutes"
DESCRIPTION = """\
Run search -> verify -> report end to end on the embedded corpus with a small 6-layer model,
and print where the report is. It first prints the plan with a time estimate measured on this
machine (recorded rates of earlier runs of the shape, or a few steps timed now); 2.5 minutes
on a quiet 2-core machine with the defaults (see the README, "First five minutes"). Every
stage's own plan and progress lines show while it runs.

examples:
  tlmsearch quickstart
  tlmsearch quickstart --arch titans --trials 12 --steps 200
  tlmsearch quickstart --tokens-per-param 5      # the screening regime's shortest: 783 steps
  tlmsearch quickstart --name first --runs-dir /tmp/runs
"""

DEFAULTS = {"trials": 8, "steps": 120, "seeds": 2, "top_k": 1}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--arch", default="transformer", help="architecture (default: transformer)")
    p.add_argument("--preset", default="cpu-xs", help="model shape preset (default: cpu-xs, 6 layers)")
    p.add_argument("--corpus", default="shakespeare", help="corpus (default: shakespeare, embedded)")
    p.add_argument(
        "--trials", type=int, default=DEFAULTS["trials"], help="search trials, the 4 baselines included (default: 8)"
    )
    p.add_argument("--steps", type=int, help="training steps per trial (default: 120)")
    p.add_argument(
        "--tokens-per-param",
        type=float,
        metavar="X",
        help="trial length in tokens per NON-EMBEDDING parameter instead of --steps (the steps derived and "
        "printed; 20 on cpu-xs is 3,129 steps, 26x the default)",
    )
    p.add_argument("--seeds", type=int, default=DEFAULTS["seeds"], help="fresh seeds per verified profile (default: 2)")
    p.add_argument("--top-k", type=int, default=DEFAULTS["top_k"], help="search profiles to verify (default: 1)")
    p.add_argument("--name", help="run name (default: quickstart-<date>-<time>)")
    p.add_argument("--runs-dir", default="runs", help="parent folder of run directories (default: runs)")
    p.add_argument(
        "--keep-checkpoints", action="store_true", help="keep each trial's checkpoints after it ends (default: deleted)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def _search_minimums(args: argparse.Namespace) -> tuple[tuple[str, int, int, str], ...]:
    steps = (("--steps", args.steps, 3, "an evaluation every third of the steps"),) if args.steps is not None else ()
    return (("--trials", args.trials, 4, "the 4 baselines run first"), *steps)


def _steps(args: argparse.Namespace, data: DataConfig) -> tuple[int, float]:
    """(steps per trial, tokens per parameter): --steps, or the steps --tokens-per-param gives on the
    quickstart's model (the search resolves the same number again), or the default."""
    from tlmsearch.configs.base import TrainConfig, check_positive
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.tuning.trainable import resolve_trial_length

    tpp = args.tokens_per_param
    if tpp is None:
        return (DEFAULTS["steps"] if args.steps is None else args.steps), 0.0
    if args.steps is not None:
        raise UserError(
            f"--steps {args.steps} and --tokens-per-param {tpp:g} both set the trial length; give one "
            "(--tokens-per-param derives the steps from the model's non-embedding parameters)"
        )
    check_positive("--tokens-per-param", tpp)  # 0, negatives and NaN are no trial length
    probe = SearchConfig(arch=args.arch, preset=args.preset, train=TrainConfig(tokens_per_param=tpp), data=data)
    steps = resolve_trial_length(probe).train.steps
    if steps < 3:
        raise UserError(
            f"--tokens-per-param {tpp:g} gives {steps} steps; a quickstart needs >= 3 (an evaluation every third)"
        )
    return steps, tpp


def _check_minimums(checks: tuple[tuple[str, int, int, str], ...]) -> None:
    """Refuse, in one line, the flags below their minimum, naming only those."""
    wrong = [f"{flag}={value} must be >= {low} ({why})" for flag, value, low, why in checks if value < low]
    if wrong:
        raise UserError("; ".join(wrong))


def quickstart_config(args: argparse.Namespace) -> SearchConfig:
    """The SearchConfig of the quickstart's search (evaluations every third of the steps)."""
    from tlmsearch.configs.base import DataConfig, TrainConfig
    from tlmsearch.configs.search import SearchConfig

    _check_minimums(_search_minimums(args))
    data = DataConfig(corpus=args.corpus)
    steps, tpp = _steps(args, data)
    name = args.name or f"quickstart-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    third = max(1, steps // 3)
    return SearchConfig(
        name=name,
        runs_dir=args.runs_dir,
        arch=args.arch,
        preset=args.preset,
        space="knots",
        sampler="tpe",
        scheduler="asha",
        trials=args.trials,
        grace_steps=third,
        cpus_per_trial=1,
        keep_checkpoints=args.keep_checkpoints,
        train=TrainConfig(
            steps=steps, tokens_per_param=tpp, eval_interval=third, warmup_steps=min(20, third), eval_windows=16
        ),
        data=data,
    )


def run(args: argparse.Namespace) -> int:
    import tlmsearch

    _check_minimums(
        (
            *_search_minimums(args),
            ("--seeds", args.seeds, 2, "a paired interval needs two seeds"),
            ("--top-k", args.top_k, 1, "at least the best profile"),
        )
    )
    from tlmsearch.rundir.noise import noise_trial_seeds

    cfg = quickstart_config(args)
    start = time.monotonic()
    noise = len(noise_trial_seeds(cfg))
    what = (
        f"quickstart: search {cfg.trials} trials of {cfg.train.steps} steps"
        + (f" ({cfg.train.tokens_per_param:g} tokens per parameter)" if cfg.train.tokens_per_param else "")
        + (f" after {noise} noise-floor runs of uniform" if noise else "")
        + f" ({cfg.arch}, preset {cfg.preset}, "
        f"corpus {cfg.data.corpus}), then verify the best {args.top_k} and the baselines with {args.seeds} "
        f"seeds, then the report"
    )
    if args.quiet:
        print(what, flush=True)
    else:
        from tlmsearch.analysis.plan import CONTROLS
        from tlmsearch.costs.estimate import plan_line
        from tlmsearch.tuning.announce import search_and_verify, verify_runs

        found = search_and_verify(cfg, verify_runs(args.top_k, args.seeds, len(CONTROLS)))
        tokens = cfg.train.batch_size * cfg.train.grad_accum * tlmsearch.preset(cfg.preset).seq_len
        print(plan_line(what, found, tokens), flush=True)
    study = tlmsearch.search(cfg, progress=not args.quiet)
    searched = time.monotonic()
    result = tlmsearch.verify(study.run_dir, top_k=args.top_k, seeds=args.seeds, progress=not args.quiet)
    verified = time.monotonic()
    paths = tlmsearch.write_report(study.run_dir)
    for v in result.verdicts:
        print(f"{v.group}: {v.headline}")
    if not result.verdicts:
        print("no verdict: no finished cosine re-evaluation (see trials.jsonl for failures)")
    print(
        f"done in {time.monotonic() - start:.0f}s (search {searched - start:.0f}s, verify {verified - searched:.0f}s)\n"
        f"report: {paths['html']}\n"
        f"        {paths['markdown']}\n"
        f"next: tlmsearch status {study.run_dir} | tlmsearch export {study.run_dir} --format native"
    )
    return 0


__all__ = ["add_arguments", "quickstart_config", "run"]
