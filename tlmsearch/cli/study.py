"""`tlmsearch study`: the paper's question across architectures in one resumable command."""

from __future__ import annotations

import argparse
from typing import Any

from tlmsearch.cli._config_args import (
    add_config_arguments,
    add_model_arguments,
    add_training_arguments,
    config_overrides,
    parse_pairs,
    training_overrides,
)
from tlmsearch.cli._options import add_verdict_arguments, verdict_levels
from tlmsearch.errors import UserError
from tlmsearch.study_config import DEFAULT_ARCHS, StudyConfig

HELP = "search + verify every architecture, then transfer each one's best profile to the others"
DESCRIPTION = """\
Ask whether cosine tapering (1.5x -> 0.5x) is near-optimal across architectures, in one run
directory runs/<name>/:

  1. for each architecture in --archs (default: {archs}): a search (runs/<name>/<arch>/),
     then `verify` of its --top-k best profiles beside uniform, cosine, the controls (expanding
     cosine, linear, bowtie) and the paper's early / middle / late groups, with planned seeds
     (--seeds auto) and the three-outcome verdict at --margin / --alpha;
  2. a transfer check: each architecture's best profile (by verified mean perplexity) re-trained
     on every other architecture, paired by seed against cosine there (runs/<name>/transfer-<arch>/,
     --transfer-seeds seeds);
  3. the study report: report.html, summary.json, summary.md (verdicts, a cross-architecture
     table of gains over uniform and cosine with intervals, the transfer matrix, the shapes, and
     the paper's 440M figures beside ours where the profiles correspond).

A cost estimate (analytic FLOPs per architecture) is printed before anything trains. Kill it
at any point: `tlmsearch resume runs/<name>` continues without training a finished trial again;
`tlmsearch status runs/<name>` shows each phase. The noise-floor phase (uniform with several
seeds before each search) is not built yet.

examples:
  tlmsearch study --preset cpu-s --trials 16 --steps 300 --name reference
  tlmsearch study --archs transformer,gated_attention --preset tiny --trials 4 --steps 20 --corpus pydoc
  tlmsearch resume runs/reference && tlmsearch status runs/reference
""".format(archs=",".join(DEFAULT_ARCHS))

_NOT_DERIVED = ("archs", "preset", "model", "base_width", "seed", "train", "data", "seeds", "margin", "alpha")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="StudyConfig as YAML/JSON (e.g. a study's study.yaml)")
    p.add_argument("--address", help="join this Ray cluster ('auto' or host:port); default: start Ray locally")
    p.add_argument("--archs", help=f"comma-separated architectures (default: {','.join(DEFAULT_ARCHS)})")
    add_model_arguments(p)
    g = p.add_argument_group("study (StudyConfig)")
    add_config_arguments(g, StudyConfig, section="study", skip=_NOT_DERIVED)
    g.add_argument("--seeds", metavar="auto|N", help="verification seeds: auto (default: planned) or N >= 2")
    add_verdict_arguments(p)
    add_training_arguments(p)
    g = p.add_argument_group("output")
    g.add_argument("--dry-run", action="store_true", help="print the resolved config and the cost estimate, then exit")
    g.add_argument("--quiet", action="store_true", help="no progress lines")


def build_config(args: argparse.Namespace) -> StudyConfig:
    """The StudyConfig that `--config` plus the flags describe."""
    from tlmsearch.rundir.io import read_yaml

    if args.config and not read_yaml(args.config):  # else an empty file would silently mean every default
        raise UserError(f"{args.config}: holds no settings (an empty or null YAML document)")
    base = StudyConfig.from_dict(read_yaml(args.config), where=args.config) if args.config else StudyConfig()
    data: dict[str, Any] = {**base.to_dict(), **config_overrides(args, "study")}
    if args.archs:
        data["archs"] = [a.strip() for a in args.archs.split(",") if a.strip()]
    for field in ("preset", "base_width"):
        if getattr(args, field) is not None:
            data[field] = getattr(args, field)
    if args.arch is not None:
        raise UserError("study takes --archs (comma-separated), not --arch")
    if args.seeds is not None:
        if args.seeds == "auto":
            data["seeds"] = 0
        elif args.seeds.isdigit() and int(args.seeds) >= 2:
            data["seeds"] = int(args.seeds)
        else:
            raise UserError(f"--seeds={args.seeds!r} must be auto or a number >= 2")
    if args.interval != "t":
        raise UserError("study decides with t intervals only (--interval t): a planned verification has few seeds")
    if args.margin is not None or args.alpha is not None or args.confidence is not None:
        data["margin"], data["alpha"] = verdict_levels(args)
    pairs = parse_pairs(args.model_pairs, "--model")
    if pairs:
        data["model"] = {**data.get("model", {}), **pairs}
    train, data_overrides = training_overrides(args)
    if "seed" in train:
        data["seed"] = train.pop("seed")
    data["train"] = {**data["train"], **train}
    data["data"] = {**data["data"], **data_overrides}
    return StudyConfig.from_dict(data)


def run(args: argparse.Namespace) -> int:
    from tlmsearch.study_cost import estimate

    cfg = build_config(args)
    if args.dry_run:
        print(cfg.to_yaml(), end="")
        print(estimate(cfg).text())
        return 0
    from tlmsearch.api import study

    result = study(cfg, address=args.address, progress=not args.quiet)
    print_study_status(result.run_dir)
    return 0


def print_study_status(study_dir: Any, as_json: bool = False) -> None:
    """Per architecture: each phase's status, trials so far, and the verdict when there is one."""
    import json

    from tlmsearch.study_files import load_config, read_state
    from tlmsearch.study_report import study_summary

    cfg = load_config(study_dir)
    phases = read_state(study_dir)["phases"]
    rows = study_progress(study_dir, cfg, phases)
    if as_json:
        print(json.dumps({"study": str(study_dir), "phases": phases, "archs": rows}, indent=2))
        return
    print(f"study {cfg.name} ({study_dir}): {', '.join(cfg.archs)}")
    for r in rows:
        print(
            f"  {r['arch']:<16} search {r['search']:<8} {r['search_trials']}/{cfg.trials} trials  "
            f"verify {r['verify']:<8} {r['verify_trials']} runs  transfer {r['transfer']:<8} "
            f"{r['transfer_trials']} runs  {r['outcome'] or ''}"
        )
    report = phases.get("report", {}).get("status", "pending")
    print(f"  report {report}")
    if report == "done":
        print(f"  answer: {study_summary(study_dir)['answer']}")


def study_progress(study_dir: Any, cfg: StudyConfig, phases: dict[str, Any]) -> list[dict[str, Any]]:
    from pathlib import Path

    from tlmsearch.rundir.records import SEARCH_KINDS, read_records
    from tlmsearch.study_files import TRANSFER_KIND, transfer_dir

    rows = []
    for arch in cfg.archs:
        recs = read_records(Path(study_dir) / arch)
        moved = read_records(transfer_dir(study_dir, arch))
        rows.append(
            {
                "arch": arch,
                "search": phases.get(f"{arch}/search", {}).get("status", "pending"),
                "verify": phases.get(f"{arch}/verify", {}).get("status", "pending"),
                "transfer": phases.get(f"transfer/{arch}", {}).get("status", "pending"),
                "search_trials": sum(r.kind in SEARCH_KINDS for r in recs),
                "verify_trials": sum(r.kind == "verify" for r in recs),
                "transfer_trials": sum(r.kind == TRANSFER_KIND for r in moved),
                "outcome": phases.get(f"{arch}/verify", {}).get("outcome"),
            }
        )
    return rows
