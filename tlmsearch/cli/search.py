"""`tlmsearch search`: a search over width profiles on Ray Tune with an Optuna sampler."""

from __future__ import annotations

import argparse
from typing import Any

from tlmsearch.cli._config_args import (
    add_config_arguments,
    add_model_arguments,
    add_training_arguments,
    config_overrides,
    parse_names,
    parse_pairs,
    screening_default_text,
    training_overrides,
)
from tlmsearch.cli._options import add_price_arguments
from tlmsearch.cli.status import EVERY_TRIAL_FAILED as EXIT_ALL_FAILED
from tlmsearch.cli.status import exit_status, print_status
from tlmsearch.configs.lr_calibration import after_explicit_lr
from tlmsearch.configs.search import SAMPLERS, SCHEDULERS, SearchConfig, load_search_config
from tlmsearch.errors import ConfigError

DEFAULT = SearchConfig()
# a search that ran but where no trial succeeded has no answer: scripts must see that

HELP = "search per-layer width profiles: parallel trials on Ray Tune, Optuna sampler, early stopping"
DESCRIPTION = """\
Search how to spread a fixed budget of MLP width over the layers: Ray Tune runs real short
training trials in parallel, an Optuna sampler chooses the next profiles from the search
space, and ASHA stops poor trials early. The baselines (uniform, cosine 1.5->0.5, linear
1.5->0.5, expanding cosine 0.5->1.5) are the first trials. Everything goes to runs/<name>/:
search.yaml (the resolved config, itself a valid --config), trials.jsonl (one record per
ended trial), optuna.log (open with `optuna-dashboard runs/<name>/optuna.log`), locations.json
and tune/ (Ray Tune's state and checkpoints; with --storage, in STORAGE/<name>/tune instead).

Noise floor (--noise-seeds N, default 3; 0 = off): before the search, uniform is trained
with seeds SEED, SEED+1, ..., SEED+N-1 at exactly the trial fidelity, never stopped early.
Seed SEED is the search's own uniform baseline (the sampler sees it once, like any baseline);
the other seeds are "noise" trials, recorded once in trials.jsonl and never shown to the
sampler. The sd of their val_loss goes to noise_floor.json and summary.json; `status`, the
report and Study.best() give search-time gaps in its units ("+0.012 nats = 0.8 sd") and mark
a gap under 2 x sqrt(2) sd (what two single-seed scores differ by from seed noise alone about
95% of the time) as a tie. A resume never re-runs a recorded noise trial.

Learning-rate calibration (--lr-calibration auto|off|RATES, default off for a search; a study
calibrates by default): before the noise floor, uniform is trained at each rate of a grid (auto:
--lr x 1/4, 1/2, 1, 2, 4; or >= 4 comma-separated rates) with --lr-calibration-seeds paired
seeds (default 3: the same seeds at every rate) for --lr-calibration-fraction of the trial
length (default 1: the trial length itself), recorded as "lr" trials in trials.jsonl. The rate
of the lowest mean final val_loss (a diverged seed makes its rate the worst; equal means: the
lower rate), refined by a parabola in log2 rate through it and its neighbours, becomes train.lr
of search.yaml, so the noise floor, every search trial, a resume and `verify` train at it; its
95% interval is a bootstrap over the seeds' spread. A best mean at an edge of the grid widens it
by a factor-2 step (at most 4 rates), then warns. lr_calibration.json and `status` show each
rate's mean and sd, the chosen rate and its interval. A resume trains only the missing runs; a
run directory from before the seeds reads as one seed per rate. An explicit --lr (or --train
lr=) turns the calibration off unless --lr-calibration is given too.

examples:
  tlmsearch search --arch transformer --preset cpu-s --space knots --sampler tpe --trials 64
  tlmsearch search --preset tiny --corpus pydoc --steps 60 --trials 8 --name smoke
  tlmsearch search --preset cpu-xs --tokens-per-param 20 --trials 16   # steps from the non-embedding parameters
  tlmsearch search --space monotone --objectives val_loss,params --base-widths 256 512 --sampler nsga2 --scheduler none
  tlmsearch search --config search.yaml --trials 128 --address auto     # on a Ray cluster
  tlmsearch search --address auto --storage s3://bucket/tlm --gpus-per-trial 0.25   # checkpoints in S3
  tlmsearch resume runs/<name>     # after Ctrl-C or a crash
  tlmsearch status runs/<name>

samplers: {samplers}; schedulers: {schedulers} (hyperband: async, up to 3 brackets);
gp, cmaes and nsga2 learn only from completed trials: use them with --scheduler none.
objectives: val_loss, plus optionally params (needs --base-widths), train_speed or infer_speed:
speed relative to the uniform profile, forward+backward or inference, measured at the end of
each full-length trial by a micro-benchmark on its worker (the trial's model and the uniform
one interleaved, 5 rounds, the median ratio; `tlmsearch profiles --throughput` measures the
same way). tokens_per_s is refused (tokens/s measured while trials share the machine is load noise).
Training and data flags mean what they mean in `train`, `compare` and `verify`; --seed is
also the sampler's seed. --tokens-per-param X sets the trial length in tokens per non-embedding
parameter: the steps are derived once, before Ray starts, and printed (a budget sweep: at its
middle budget); every record carries its tokens per parameter and epochs, and the report and
the verdict headline state the regime (decisions at >= 20 tokens per parameter, screens at >= 5).

Joint architectures (--space joint or joint_flops; profile texts joint:..., `tlmsearch profiles
--family joint`): query heads and block widths move with depth beside the MLP widths, which are
solved so that every architecture holds exactly the uniform model's non-embedding parameters
(--space joint; hold=params, the default) or its training FLOPs per token (--space joint_flops;
hold=flops in a profile text, e.g. --baseline joint:block,ratio=0.3,position=0.75,hold=flops).
MLP-only profiles hold both at once; at equal parameters a head or block taper moves the FLOPs,
at equal FLOPs the parameters.

A --space file is checked before anything starts: its sample() is called once on a throwaway
trial and must return a ProfileSpec the budget can hold. Should it fail later, mid-search, that
trial is recorded as failed with the space's error (a warning line says so) and the search goes on.

exit status: 0 done; 2 bad input (one line, nothing started); {all_failed} the search ended but
every trial failed; 130 interrupted (resume it with `tlmsearch resume`).
""".format(samplers=" ".join(SAMPLERS), schedulers=" ".join(SCHEDULERS), all_failed=EXIT_ALL_FAILED)

# SearchConfig fields whose flags are not derived one to one: the shared model and training
# flags carry arch/preset/base_width/model/seed/train/data; the rest have their own form below
_NOT_DERIVED = ("arch", "preset", "model", "base_width", "base_widths", "objectives", "seed", "baselines")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="SearchConfig as YAML/JSON (e.g. a run's search.yaml)")
    p.add_argument("--address", help="join this Ray cluster ('auto' or host:port); default: start Ray locally")
    add_model_arguments(p)
    g = p.add_argument_group("search (SearchConfig)")
    add_config_arguments(g, SearchConfig, section="search", skip=_NOT_DERIVED, names={"time_budget_s": "--time-budget"})
    g.add_argument(
        "--base-widths", type=int, nargs=2, metavar=("LOW", "HIGH"), help="budget sweep: base widths from LOW to HIGH"
    )
    g.add_argument(
        "--objectives",
        help=f"comma-separated: val_loss[,params|train_speed|infer_speed] (default: {DEFAULT.objectives[0]})",
    )
    g.add_argument(
        "--baseline", action="append", metavar="PROFILE", help="a baseline (repeatable; replaces the defaults)"
    )
    g.add_argument("--no-baselines", action="store_true", help="seed no baselines")
    add_training_arguments(p, default_text=screening_default_text())
    g = p.add_argument_group("output")
    g.add_argument(
        "--dry-run",
        action="store_true",
        help="print the resolved config, then the plan line with its time estimate (stderr), and exit",
    )
    add_price_arguments(g)
    g.add_argument("--quiet", action="store_true", help="no plan line, no progress line")
    g.add_argument("--json", action="store_true", help="print the final status as JSON")


def build_config(args: argparse.Namespace) -> SearchConfig:
    """The SearchConfig that `--config` plus the flags describe.

    `--seed` is the training seed of every trial and, in a search, also the sampler's seed
    (`SearchConfig.seed`); the other training and data flags replace single fields of
    `SearchConfig.train` / `.data`.
    """
    if args.no_baselines and args.baseline:
        raise ConfigError(
            f"--no-baselines and --baseline {' '.join(args.baseline)} contradict each other; give --baseline "
            "PROFILE (repeatable) to choose the baselines, or --no-baselines to run none"
        )
    base = load_search_config(args.config) if args.config else SearchConfig()
    data: dict[str, Any] = {**base.to_dict(), **config_overrides(args, "search")}
    for field in ("arch", "preset", "base_width"):
        if getattr(args, field) is not None:
            data[field] = getattr(args, field)
    if args.base_widths is not None:
        data["base_widths"] = list(args.base_widths)
    if args.objectives is not None:  # "" names no objective: refused by the config, never the default
        data["objectives"] = parse_names(args.objectives, "--objectives", "val_loss,train_speed")
    if args.no_baselines:
        data["baselines"] = []
    elif args.baseline:
        data["baselines"] = list(args.baseline)
    pairs = parse_pairs(args.model_pairs, "--model")
    if pairs:
        data["model"] = {**data.get("model", {}), **pairs}
    train, data_overrides = training_overrides(args)
    if "seed" in train:
        data["seed"] = train["seed"]
    data["train"] = {**data["train"], **train}
    # an explicit --lr turns the calibration off unless --lr-calibration is given too
    given = "lr_calibration" in config_overrides(args, "search")
    data["lr_calibration"] = after_explicit_lr(data["lr_calibration"], "lr" in train, given)
    data["data"] = {**data["data"], **data_overrides}
    return SearchConfig.from_dict(data)


def run(args: argparse.Namespace) -> int:
    cfg = build_config(args)
    if args.dry_run:  # the checks a search makes before it starts (`runner.search` makes them too)
        from tlmsearch.tuning.runner import resolve
        from tlmsearch.tuning.searcher import check_space_samples

        cfg = resolve(cfg)
        check_space_samples(cfg)
        print(cfg.to_yaml(), end="", flush=True)
        if not args.quiet:  # what the search would run and how long, on stderr (stdout stays YAML)
            from tlmsearch.tuning.announce import announce, search_line

            announce(search_line, None, cfg)
        return 0
    from tlmsearch.tuning import search

    limit = None if args.yes else args.max_hours
    study = search(cfg, address=args.address, progress=not args.quiet, max_hours=limit)
    print_status(study, as_json=args.json)
    return exit_status(study)
