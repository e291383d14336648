"""`tlmsearch compare`: train a fixed list of profiles with seeds and report them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tlmsearch.cli._config_args import (
    add_model_arguments,
    add_training_arguments,
    apply_overrides,
    parse_pairs,
    training_overrides,
)
from tlmsearch.cli._options import add_price_arguments, add_verdict_arguments, verdict_levels
from tlmsearch.cli.status import EVERY_TRIAL_FAILED
from tlmsearch.cli.verify import print_verdicts
from tlmsearch.core.base import DataConfig, TrainConfig

HELP = "controlled comparison: train fixed profiles with several seeds, then the verdict and report"
DESCRIPTION = """\
Train a fixed list of width profiles (no sampler, no early stopping) with several seeds each, in
parallel through Ray, into a new run directory; then compare them paired by seed against cosine
and uniform (intervals, cosine's rank and regret, and the three-outcome verdict against --margin
at level --alpha) and write report.html,
summary.md and summary.json there.

The paper's controlled experiment:
  tlmsearch compare --arch transformer --preset cpu-s \\
      --families uniform groups:early groups:middle groups:late cosine --seeds 3

Profiles are family[:param=value,...] texts as in `tlmsearch profiles`; the set name `literature`
stands for the shapes the literature argues for (openelm, reverse, frame, crown, middle, bowtie):
  tlmsearch compare --preset cpu-s --families uniform cosine literature --seeds 3

The closing line counts the runs that completed and those that failed (with the first one's
reason); exit status 3 when every run failed.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--families",
        nargs="+",
        required=True,
        metavar="SPEC",
        help="profiles to train, e.g. uniform groups:early cosine:start=1.5,end=0.5; the set 'literature' adds "
        "openelm, reverse, frame, crown, middle and bowtie",
    )
    p.add_argument(
        "--seeds", type=int, default=3, help="seeds per profile: --seed, --seed+1, ... (2 to 1000; default: 3)"
    )
    p.add_argument(
        "--reference",
        metavar="SPEC",
        default="cosine:start=1.5,end=0.5",
        help="the profile every candidate is compared with (trained too when --families leave it out): the "
        "verdict says whether it is near-optimal (default: cosine:start=1.5,end=0.5)",
    )
    p.add_argument(
        "--allow-collapsed",
        action="store_true",
        help="go on where profiles build one model at this depth (cosine and linear 1.5 -> 0.5 at 2 or 3 layers): "
        "each such set trains once, as one candidate under all its names (default: refused)",
    )
    add_model_arguments(p)
    add_training_arguments(p)
    g = p.add_argument_group("resources and output")
    g.add_argument("--cpus-per-trial", type=float, default=1.0, help="CPUs per training run (default: 1)")
    g.add_argument(
        "--gpus-per-trial", default="auto", metavar="auto|N",
        help="GPUs per training run; fractions share one; a whole N > 1: N data-parallel workers of one GPU each; "
        "auto = one GPU a run where torch sees CUDA, else the CPU (default: auto)",
    )  # fmt: skip
    g.add_argument(
        "--workers-per-trial", type=int, default=1,
        help="data-parallel workers per run (Ray Train, DDP), each with --cpus-per-trial CPUs and --gpus-per-trial "
        "GPUs; they split every step's batch: the numbers of one worker (default: 1)",
    )  # fmt: skip
    g.add_argument("--name", help="run name (default: compare-<arch>-<date>-<time>)")
    g.add_argument("--runs-dir", default="runs", help="parent folder of run directories (default: runs)")
    g.add_argument("--address", help="join the Ray cluster at this address (default: local Ray)")
    g.add_argument(
        "--storage",
        default="",
        help="where trial checkpoints go: a path or URI (s3://, gs://, file://) every node reaches "
        "(default: the run directory)",
    )
    g.add_argument(
        "--keep-checkpoints", action="store_true", help="keep each run's checkpoints after it ends (default: deleted)"
    )
    g.add_argument(
        "--pack",
        default="off",
        metavar="auto|on|off",
        help="train the profiles x seeds side by side in packs, each still one record: auto (where bench_pack "
        "measured packs faster), on or off (default: off)",
    )
    g.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    g.add_argument("--quiet", action="store_true", help="no plan line, no progress line")
    add_price_arguments(g)
    add_verdict_arguments(p)


def compare_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of `compare` that the flags describe (no Ray, no files).

    Training and data flags mean what they mean in `train` and `search`: `--steps` sets the
    step count only, `--seed` is the first of the seeds.
    """
    from tlmsearch.configs.verify import check_pack

    train, data = training_overrides(args)
    train_cfg = apply_overrides(TrainConfig(), train, "train")
    return {
        "arch": args.arch or "transformer",
        "preset": args.preset or "cpu-s",
        "seeds": args.seeds,
        "base_width": args.base_width or 0,
        "name": args.name or "",
        "runs_dir": args.runs_dir,
        "model": parse_pairs(args.model_pairs, "--model"),
        "train": train_cfg.to_dict(),
        "data": apply_overrides(DataConfig(), data, "data").to_dict(),
        "cpus_per_trial": args.cpus_per_trial,
        "gpus_per_trial": args.gpus_per_trial,
        "workers_per_trial": args.workers_per_trial,
        "storage": args.storage,
        "keep_checkpoints": args.keep_checkpoints,
        "seed": train_cfg.seed,
        "pack": check_pack(args.pack, flags=True),
    }


def run(args: argparse.Namespace) -> int:
    from tlmsearch.api import compare
    from tlmsearch.core.validate import check_seed_count
    from tlmsearch.profiles import expand_profile_sets

    check_seed_count("--seeds", args.seeds)  # named as the flag, before anything is built
    margin, alpha = verdict_levels(args)
    result = compare(
        list(expand_profile_sets(args.families)),
        **compare_arguments(args),
        margin=margin,
        alpha=alpha,
        method=args.interval,
        address=args.address,
        progress=not (args.json or args.quiet),
        yes=args.yes,
        max_hours=args.max_hours,
        allow_collapsed=args.allow_collapsed,
        reference=args.reference,
    )
    failed = [r for r in result.records if r.status == "failed"]
    if not args.json:
        print(compare_line(result.profiles, result.seeds, result.records, result.run_dir))
    print_verdicts(result.verdicts, args.json)
    if not result.verdicts and not args.json:
        print("no verdict on cosine: include cosine among --families for one")
    if not args.json and (result.run_dir / "report.html").exists():
        print(f"wrote {result.run_dir / 'report.html'}")
    return EVERY_TRIAL_FAILED if failed and len(failed) == len(result.records) else 0


def compare_line(profiles: list[str], seeds: list[int], records: list[Any], run_dir: Path) -> str:
    """The comparison's closing line: how many runs completed, and how many failed, with the first
    failure's reason (never "complete" over failed records)."""
    counts = {s: sum(r.status == s for r in records) for s in ("complete", "stopped", "failed")}
    ended = ", ".join(f"{n} {s}" for s, n in counts.items() if n or s == "complete")
    line = f"compare: {len(profiles)} profiles x {len(seeds)} seeds, {ended} -> {run_dir}"
    first = next((r for r in records if r.status == "failed"), None)
    if first is not None:
        from tlmsearch.analysis.collect import label

        reason = (first.reason or "no reason recorded").strip().splitlines()[0][:300]
        line += f"\n  {counts['failed']} failed; the first, {label(first)} seed {first.seed}: {reason}"
    return line
