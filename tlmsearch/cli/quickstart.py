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
    from tlmsearch.configs.quickstart import QuickstartConfig
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.core.base import DataConfig

HELP = "run the whole loop (search with baselines, verify, report) on a small model in minutes"
DESCRIPTION = """\
Run search -> verify -> report end to end on the embedded corpus with a small 6-layer model,
and print where the report is. It first prints the plan with a time estimate measured on this
machine (recorded rates of earlier runs of the shape, or its FLOPs at the measured matmul peak); 2.5 minutes
on a quiet 2-core machine with the defaults (see the README, "First five minutes"). Every
stage's own plan and progress lines show while it runs.

examples:
  tlmsearch quickstart
  tlmsearch quickstart --arch titans --trials 12 --steps 200
  tlmsearch quickstart --tokens-per-param 5      # the screening regime's shortest: 783 steps
  tlmsearch quickstart --name first --runs-dir /tmp/runs
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """QuickstartConfig's fields as flags (help and defaults from the config), plus --quiet."""
    from tlmsearch.cli._config_args import add_config_arguments
    from tlmsearch.configs.quickstart import QuickstartConfig

    add_config_arguments(p, QuickstartConfig, section="quickstart")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def quickstart_options(args: argparse.Namespace) -> QuickstartConfig:
    """The `QuickstartConfig` the flags describe (the trial length given once: --steps or
    --tokens-per-param above 0)."""
    from tlmsearch.cli._config_args import config_overrides
    from tlmsearch.configs.quickstart import QuickstartConfig
    from tlmsearch.core.base import check_positive

    given = config_overrides(args, "quickstart")
    if "tokens_per_param" in given:
        if "steps" in given:
            raise UserError(
                f"--steps {given['steps']} and --tokens-per-param {given['tokens_per_param']:g} both set the trial "
                "length; give one (--tokens-per-param derives the steps from the model's non-embedding parameters)"
            )
        check_positive("--tokens-per-param", given["tokens_per_param"])  # 0, negatives and NaN are no length
    return QuickstartConfig(**given)


def _steps(q: QuickstartConfig, data: DataConfig) -> int:
    """Steps per trial: --steps, or the steps --tokens-per-param gives on the quickstart's model
    (the search resolves the same number again)."""
    from tlmsearch.configs.resolve import resolve_trial_length
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.core.base import TrainConfig

    if not q.tokens_per_param:
        return q.steps
    probe = SearchConfig(
        arch=q.arch, preset=q.preset, train=TrainConfig(tokens_per_param=q.tokens_per_param), data=data
    )
    steps = resolve_trial_length(probe).train.steps
    if steps < 3:
        raise UserError(
            f"--tokens-per-param {q.tokens_per_param:g} gives {steps} steps; a quickstart needs >= 3 (an evaluation "
            "every third)"
        )
    return steps


def search_config(q: QuickstartConfig) -> SearchConfig:
    """The SearchConfig of the quickstart's search (evaluations every third of the steps)."""
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.core.base import DataConfig, TrainConfig

    data = DataConfig(corpus=q.corpus)
    steps = _steps(q, data)
    name = q.name or f"quickstart-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    third = max(1, steps // 3)
    return SearchConfig(
        name=name,
        runs_dir=q.runs_dir,
        arch=q.arch,
        preset=q.preset,
        space="knots",
        sampler="tpe",
        scheduler="asha",
        trials=q.trials,
        grace_steps=third,
        cpus_per_trial=1,
        keep_checkpoints=q.keep_checkpoints,
        train=TrainConfig(
            steps=steps,
            tokens_per_param=q.tokens_per_param,
            eval_interval=third,
            warmup_steps=min(20, third),
            eval_windows=16,
        ),
        data=data,
    )


def quickstart_config(args: argparse.Namespace) -> SearchConfig:
    """The SearchConfig of the quickstart's search, from the command line."""
    return search_config(quickstart_options(args))


def run(args: argparse.Namespace) -> int:
    import tlmsearch
    from tlmsearch.rundir.noise import noise_trial_seeds

    q = quickstart_options(args)
    cfg = search_config(q)
    start = time.monotonic()
    noise = len(noise_trial_seeds(cfg))
    what = (
        f"quickstart: search {cfg.trials} trials of {cfg.train.steps} steps"
        + (f" ({cfg.train.tokens_per_param:g} tokens per parameter)" if cfg.train.tokens_per_param else "")
        + (f" after {noise} noise-floor runs of uniform" if noise else "")
        + f" ({cfg.arch}, preset {cfg.preset}, "
        f"corpus {cfg.data.corpus}), then verify the best {q.top_k} and the baselines with {q.seeds} "
        f"seeds, then the report"
    )
    if args.quiet:
        print(what, flush=True)
    else:
        from tlmsearch.analysis.plan import CONTROLS
        from tlmsearch.costs.estimate import plan_line
        from tlmsearch.costs.phases import verify_runs
        from tlmsearch.tuning.announce import search_and_verify

        found = search_and_verify(cfg, verify_runs(q.top_k, q.seeds, len(CONTROLS)))
        tokens = cfg.train.batch_size * cfg.train.grad_accum * tlmsearch.preset(cfg.preset).seq_len
        print(plan_line(what, found, tokens), flush=True)
    study = tlmsearch.search(cfg, progress=not args.quiet)
    searched = time.monotonic()
    result = tlmsearch.verify(study.run_dir, top_k=q.top_k, seeds=q.seeds, progress=not args.quiet)
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


__all__ = ["add_arguments", "quickstart_config", "quickstart_options", "run", "search_config"]
