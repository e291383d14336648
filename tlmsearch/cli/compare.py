"""`tlmsearch compare`: train a fixed list of profiles with seeds and report them."""

from __future__ import annotations

import argparse

from tlmsearch.cli._options import add_verdict_arguments, verdict_levels

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

Profiles are family[:param=value,...] texts as in `tlmsearch profiles`.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--families",
        nargs="+",
        required=True,
        metavar="SPEC",
        help="profiles to train, e.g. uniform groups:early cosine:start=1.5,end=0.5",
    )
    p.add_argument(
        "--arch",
        default="transformer",
        help="transformer | gated_attention | titans | hope_attention (default transformer)",
    )
    p.add_argument("--preset", default="cpu-s", help="model shape preset (default cpu-s)")
    p.add_argument("--base-width", type=int, default=0, help="MLP width per layer of the budget (default: preset's)")
    p.add_argument("--seeds", type=int, default=3, help="seeds per profile (default 3)")
    p.add_argument("--steps", type=int, help="training steps per run (default: TrainConfig's)")
    p.add_argument("--lr", type=float, help="peak learning rate")
    p.add_argument("--batch-size", type=int, help="sequences per micro-batch")
    p.add_argument("--eval-interval", type=int, help="steps between evaluations")
    p.add_argument("--corpus", help="shakespeare (default), bible-web, pydoc, text:PATH, tokens:PATH")
    p.add_argument("--tokenizer", metavar="KIND", help="byte (default), bpe or bpe:VOCAB")
    p.add_argument("--cpus-per-trial", type=float, default=1.0, help="CPUs per training run (default 1)")
    p.add_argument("--gpus-per-trial", type=float, default=0.0, help="GPUs per training run; fractions share one")
    p.add_argument("--seed", type=int, default=0, help="first seed (seeds are seed, seed+1, ...)")
    add_verdict_arguments(p)
    p.add_argument("--name", help="run name (default compare-<arch>-<date>-<time>)")
    p.add_argument("--runs-dir", default="runs", help="parent folder of run directories (default runs)")
    p.add_argument("--address", help="join the Ray cluster at this address (default: local Ray)")
    p.add_argument("--json", action="store_true", help="print the verdicts as JSON")


def run(args: argparse.Namespace) -> int:
    from tlmsearch.analysis.compare import compare
    from tlmsearch.cli.verify import print_verdicts

    margin, alpha = verdict_levels(args)
    train: dict = {}
    for flag in ("lr", "batch_size", "eval_interval"):
        if getattr(args, flag) is not None:
            train[flag] = getattr(args, flag)
    data: dict = {}
    if args.corpus:
        data["corpus"] = args.corpus
    if args.tokenizer:
        from tlmsearch.cli.train import parse_tokenizer

        data.update(parse_tokenizer(args.tokenizer))
    if args.steps is not None:
        train["steps"] = args.steps
        train.setdefault("warmup_steps", min(20, args.steps))
        train.setdefault("eval_interval", min(50, args.steps))
    result = compare(
        args.families,
        arch=args.arch,
        preset=args.preset,
        seeds=args.seeds,
        base_width=args.base_width,
        name=args.name or "",
        runs_dir=args.runs_dir,
        train=train,
        data=data,
        cpus_per_trial=args.cpus_per_trial,
        gpus_per_trial=args.gpus_per_trial,
        seed=args.seed,
        margin=margin,
        alpha=alpha,
        method=args.interval,
        address=args.address,
        progress=not args.json,
    )
    if not args.json:
        done = sum(r.status == "complete" for r in result.records)
        print(
            f"compare: {len(result.profiles)} profiles x {len(result.seeds)} seeds, {done} complete -> {result.run_dir}"
        )
    print_verdicts(result.verdicts, args.json)
    if not result.verdicts and not args.json:
        print("no verdict on cosine: include cosine among --families for one")
    if not args.json and (result.run_dir / "report.html").exists():
        print(f"wrote {result.run_dir / 'report.html'}")
    return 0
