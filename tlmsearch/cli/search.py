"""`tlmsearch search`: a search over width profiles on Ray Tune with an Optuna sampler."""

from __future__ import annotations

import argparse
from typing import Any

from tlmsearch.cli._config_args import add_model_arguments, add_training_arguments, parse_pairs, training_overrides
from tlmsearch.cli.status import print_status
from tlmsearch.search_config import SAMPLERS, SCHEDULERS, SearchConfig

HELP = "search per-layer width profiles: parallel trials on Ray Tune, Optuna sampler, early stopping"
DESCRIPTION = """\
Search how to spread a fixed budget of MLP width over the layers: Ray Tune runs real short
training trials in parallel, an Optuna sampler chooses the next profiles from the search
space, and ASHA stops poor trials early. The baselines (uniform, cosine 1.5->0.5, linear
1.5->0.5, expanding cosine 0.5->1.5) are the first trials. Everything goes to runs/<name>/:
search.yaml (the resolved config, itself a valid --config), trials.jsonl (one record per
ended trial), optuna.log (open with `optuna-dashboard runs/<name>/optuna.log`) and tune/.

examples:
  tlmsearch search --arch transformer --preset cpu-s --space knots --sampler tpe --trials 64
  tlmsearch search --preset tiny --corpus pydoc --steps 60 --trials 8 --name smoke
  tlmsearch search --space monotone --objectives val_loss,params --base-widths 256 512 --sampler nsga2
  tlmsearch search --config search.yaml --trials 128 --address auto     # on a Ray cluster
  tlmsearch resume runs/<name>     # after Ctrl-C or a crash
  tlmsearch status runs/<name>

samplers: {samplers}; schedulers: {schedulers} (hyperband: async, 3 brackets);
objectives: val_loss, plus optionally params (needs --base-widths) or tokens_per_s.
Training and data flags mean what they mean in `train`, `compare` and `verify`; --seed is
also the sampler's seed.
""".format(samplers=" ".join(SAMPLERS), schedulers=" ".join(SCHEDULERS))

# flag dest -> SearchConfig field (top level); the model, training and data flags are shared
_TOP = {
    "name": "name", "runs_dir": "runs_dir", "arch": "arch", "preset": "preset", "base_width": "base_width",
    "base_widths": "base_widths", "space": "space", "sampler": "sampler", "scheduler": "scheduler",
    "reduction_factor": "reduction_factor", "grace_steps": "grace_steps", "trials": "trials",
    "time_budget": "time_budget_s", "max_concurrent": "max_concurrent", "cpus_per_trial": "cpus_per_trial",
    "gpus_per_trial": "gpus_per_trial", "max_failures": "max_failures",
}  # fmt: skip


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="SearchConfig as YAML/JSON (e.g. a run's search.yaml)")
    p.add_argument("--name", help="run name: the run directory is RUNS_DIR/NAME (default: generated)")
    p.add_argument("--runs-dir", help="parent of run directories (default: runs)")
    p.add_argument("--address", help="join this Ray cluster ('auto' or host:port); default: start Ray locally")
    add_model_arguments(p)
    g = p.add_argument_group("search")
    g.add_argument("--base-widths", type=int, nargs=2, metavar=("LOW", "HIGH"), help="budget sweep range")
    g.add_argument("--space", help="search space name (see `tlmsearch profiles --spaces`) or a .py file")
    g.add_argument("--sampler", help=f"{', '.join(SAMPLERS)} (default: tpe)")
    g.add_argument("--objectives", help="comma-separated: val_loss[,params|tokens_per_s] (default: val_loss)")
    g.add_argument("--scheduler", help=f"{', '.join(SCHEDULERS)} (default: asha)")
    g.add_argument("--reduction-factor", type=int, help="ASHA/HyperBand reduction factor (default: 3)")
    g.add_argument("--grace-steps", type=int, help="no early stopping before this many steps")
    g.add_argument("--trials", type=int, help="number of trials, baselines included (default: 32)")
    g.add_argument("--time-budget", type=float, metavar="SECONDS", help="stop the search after this long")
    g.add_argument("--max-concurrent", type=int, help="trials at once (default: as resources allow)")
    g.add_argument("--cpus-per-trial", type=float, help="CPUs per trial, also its torch threads (default: 1)")
    g.add_argument("--gpus-per-trial", type=float, help="fractions share a GPU, e.g. 0.5 (default: 0)")
    g.add_argument("--max-failures", type=int, help="retries of a trial whose worker died (default: 2)")
    g.add_argument(
        "--baseline", action="append", metavar="PROFILE", help="a baseline (repeatable; replaces the defaults)"
    )
    g.add_argument("--no-baselines", action="store_true", help="seed no baselines")
    add_training_arguments(p)
    g = p.add_argument_group("output")
    g.add_argument("--dry-run", action="store_true", help="print the resolved config and exit")
    g.add_argument("--quiet", action="store_true", help="no progress line")
    g.add_argument("--json", action="store_true", help="print the final status as JSON")


def build_config(args: argparse.Namespace) -> SearchConfig:
    """The SearchConfig that `--config` plus the flags describe.

    `--seed` is the training seed of every trial and, in a search, also the sampler's seed
    (`SearchConfig.seed`); the other training and data flags replace single fields of
    `SearchConfig.train` / `.data`.
    """
    base = SearchConfig.load(args.config) if args.config else SearchConfig()
    data: dict[str, Any] = base.to_dict()
    for dest, field in _TOP.items():
        value = getattr(args, dest, None)
        if value is not None:
            data[field] = list(value) if isinstance(value, list) else value
    if args.objectives:
        data["objectives"] = [o.strip() for o in args.objectives.split(",") if o.strip()]
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
    data["data"] = {**data["data"], **data_overrides}
    return SearchConfig.from_dict(data)


def run(args: argparse.Namespace) -> int:
    cfg = build_config(args)
    if args.dry_run:
        from tlmsearch.tuning.runner import resolve

        print(resolve(cfg).to_yaml(), end="")
        return 0
    from tlmsearch.tuning import search

    study = search(cfg, address=args.address, progress=not args.quiet)
    print_status(study, as_json=args.json)
    return 0
