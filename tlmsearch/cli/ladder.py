"""`tlmsearch ladder`: the same profiles at several model sizes x tokens per parameter, and how
their gain moves with training compute."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tlmsearch.cli._config_args import add_config_arguments, config_overrides, parse_pairs, training_overrides
from tlmsearch.cli._options import add_price_arguments
from tlmsearch.cli._resource_flags import add_resource_flags, resources
from tlmsearch.costs.plan import LINK_GB_S, STEP_FLOOR_MS, TRIAL_HOURS
from tlmsearch.errors import UserError
from tlmsearch.ladders.config import LadderConfig, ladder_train

HELP = "train the same profiles at several sizes x tokens per parameter; fit the gain against compute"
DESCRIPTION = """\
Answer at more than one scale: at every point SHAPE@TOKENS_PER_PARAM (a preset, with optional
shape overrides, trained for that many tokens per non-embedding parameter) train cosine,
uniform, the literature's profiles (--profiles) and optionally a search's best (--best SPEC or
--best-from RUN_DIR) with the same paired seeds, give the three-outcome verdict there, then fit
each profile's gain over uniform and over cosine against log10(training FLOPs) with an interval
that carries every point's uncertainty, and extrapolate to --target (a preset or a parameter
count such as 440m), saying how far that reaches.

actions:
  run     train a new ladder into runs/<name>/ (one run directory per point), then report; priced
          first (nothing trains), and refused beyond --max-hours (default 12) of this machine unless --yes
  resume  continue an interrupted ladder: finished runs are never trained again
  status  each point's phases, runs so far and verdict
  report  write summary.json, summary.md and report.html from the records
          (--readme-table: print the README's table of the ladder instead)
  plan    price a ladder: runs, FLOPs, GPU-hours (and CPU-hours at --cpu-flops)

examples (a compute arm: one depth and head size; a depth arm: equal parameters, layers varying):
  tlmsearch ladder plan --points cpu-xs:d_model=32,n_heads=2,n_layers=8,base_width=96@20 cpu-xs:n_layers=8@20
  tlmsearch ladder run --points cpu-xs:d_model=32,n_heads=2,n_layers=8,base_width=96@20 cpu-xs:n_layers=8@20 \\
      --name ladder-t20 --corpus mix
  tlmsearch ladder plan --arm depth --points cpu-xs:n_layers=4,base_width=464@20 cpu-xs:n_layers=8@20
  tlmsearch ladder resume runs/ladder-t20 && tlmsearch ladder report runs/ladder-t20
"""

_SKIP = ("seeds", "seed", "train", "data")


def _ladder_flags(p: argparse.ArgumentParser, *, training: bool) -> None:
    from tlmsearch.core.base import DataConfig, TrainConfig

    p.add_argument("--config", metavar="FILE", help="LadderConfig as YAML/JSON (e.g. a ladder's ladder.yaml)")
    g = p.add_argument_group("ladder (LadderConfig)")
    add_config_arguments(g, LadderConfig, section="ladder", skip=_SKIP)
    g.add_argument("--seeds", metavar="auto|N", help="paired seeds per profile at every point: N >= 2 or auto")
    g.add_argument("--best-from", metavar="RUN_DIR", help="train the best profile of this search (or study) as 'best'")
    if not training:
        return
    g = p.add_argument_group("training at every point (TrainConfig; the length is each point's)")
    shown = {f: f"{getattr(ladder_train(), f)} (a ladder's)" for f in ("schedule", "final_eval_windows")}
    add_config_arguments(g, TrainConfig, section="train", skip=("steps", "tokens_per_param"), default_text=shown)
    g.add_argument("--train", dest="train_pairs", action="append", metavar="KEY=VALUE", help="any TrainConfig field")
    g = p.add_argument_group("data (DataConfig)")
    add_config_arguments(g, DataConfig, section="data")
    g.add_argument("--data", dest="data_pairs", action="append", metavar="KEY=VALUE", help="any DataConfig field")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    run_p = sub.add_parser("run", help="train a new ladder, then write its report")
    _ladder_flags(run_p, training=True)
    run_p.add_argument("--address", help="join this Ray cluster ('auto' or host:port); default: start Ray locally")
    run_p.add_argument("--quiet", action="store_true", help="no progress lines")
    add_price_arguments(run_p)
    res = sub.add_parser("resume", help="continue an interrupted ladder")
    res.add_argument("ladder_dir", metavar="LADDER_DIR")
    res.add_argument("--address", help="join this Ray cluster ('auto' or host:port)")
    res.add_argument("--quiet", action="store_true", help="no progress lines")
    add_resource_flags(res, ladder=True)
    g = res.add_argument_group(
        "the plan from here on (points whose verification has begun keep theirs; `ladder status` shows each point's)"
    )
    g.add_argument(
        "--max-seeds", type=int, metavar="N",
        help="cap on seeds per profile for the points not begun (at least the pilot's seeds + 2): a ladder dearer "
        "than the machine, cut at its large points",
    )  # fmt: skip
    g.add_argument(
        "--profiles", nargs="*", metavar="PROFILE",
        help="profiles beside cosine and uniform for the points not begun (none: those two only); the trend of a "
        "profile dropped is fitted over the points that trained it",
    )  # fmt: skip
    for name, text in (("status", "each point's phases and verdict"), ("report", "write the ladder's report")):
        q = sub.add_parser(name, help=text)
        q.add_argument("ladder_dir", metavar="LADDER_DIR")
        q.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "report":
            q.add_argument(
                "--readme-table", action="store_true",
                help="print the README's table of the ladder (markers included) from its records; writes nothing",
            )  # fmt: skip
    pl = sub.add_parser("plan", help="price a ladder before running it")
    _ladder_flags(pl, training=True)
    pl.add_argument("--gpu", default="h100-sxm", help="GPU model for GPU-hours (default h100-sxm)")
    pl.add_argument("--mfu", type=float, default=0.4, help="share of the GPU's dense BF16 peak (default 0.4)")
    pl.add_argument(
        "--step-ms", type=float, default=STEP_FLOOR_MS,
        help=f"GPU milliseconds a step costs at least: kernel launches bound small models (default {STEP_FLOOR_MS:g}, "
        "measured on an H200 at cpu-s; 0 = FLOPs only)",
    )  # fmt: skip
    pl.add_argument("--cpu-flops", type=float, help="sustained FLOP/s of the CPUs, for CPU-hours (> 0)")
    pl.add_argument(
        "--trial-hours", type=float, default=TRIAL_HOURS, metavar="H",
        help=f"say for each point how many GPUs a trial should take to end within H hours (default {TRIAL_HOURS:g})",
    )  # fmt: skip
    pl.add_argument(
        "--link-gb-s", type=float, default=LINK_GB_S, metavar="GB/S",
        help=f"GB/s each way between a trial's GPUs, for its gradient all-reduce (default {LINK_GB_S:g}: one 400 Gb/s "
        "InfiniBand port; 450 for NVLink within a node)",
    )  # fmt: skip
    pl.add_argument(
        "--paired-sd", type=float, metavar="SD",
        help="nats: the sd over seeds of a profile's final loss minus uniform's (a pilot's, e.g. 0.05); says how "
        "often the trend test would show the paper's trend on this plan, and the smallest trend it shows 4 times in 5",
    )  # fmt: skip
    pl.add_argument("--json", action="store_true", help="machine-readable output")


def build_config(args: argparse.Namespace) -> LadderConfig:
    """The LadderConfig that `--config` plus the flags describe."""
    from tlmsearch.rundir.io import read_yaml

    if args.config and not read_yaml(args.config):
        raise UserError(f"{args.config}: holds no settings (an empty or null YAML document)")
    base = LadderConfig.from_dict(read_yaml(args.config), where=args.config) if args.config else None
    data: dict[str, Any] = {**(base.to_dict() if base else {}), **config_overrides(args, "ladder")}
    if args.seeds is not None:
        from tlmsearch.core.validate import check_seed_count

        seeds = args.seeds if args.seeds == "auto" else int(args.seeds) if args.seeds.isdigit() else args.seeds
        data["seeds"] = 0 if seeds == "auto" else check_seed_count("--seeds", seeds, auto=True)
    if args.best_from:
        if data.get("best"):
            raise UserError("give --best or --best-from, not both")
        data["best"] = best_profile(args.best_from, str(data.get("arch") or "transformer"))
    train, data_overrides = training_overrides(args)
    train.update(parse_pairs(getattr(args, "train_pairs", None), "--train"))
    data_overrides.update(parse_pairs(getattr(args, "data_pairs", None), "--data"))
    for key in ("steps", "tokens_per_param"):
        if key in train and (key == "steps" or train[key]):
            raise UserError(f"--train {key}: a ladder's lengths are its points' (SHAPE@TOKENS_PER_PARAM)")
        train.pop(key, None)
    if "seed" in train:
        data["seed"] = train.pop("seed")
    data["train"] = {**(data.get("train") or ladder_train().to_dict()), **train}  # flags change the ladder's
    data["data"] = {**(data.get("data") or {}), **data_overrides}
    if not data.get("points"):
        raise UserError(
            "a ladder needs --points SHAPE@TOKENS_PER_PARAM ... (at least 2), e.g. --points tiny@5 cpu-xs@5"
        )
    return LadderConfig.from_dict(data)


def best_profile(run_dir: str, arch: str) -> str:
    """The best profile of a search run (by verified mean perplexity when verified, else the best
    full-fidelity search trial), or of `arch`'s search in a study directory, as a ProfileSpec text."""
    from pathlib import Path

    from tlmsearch.analysis.summary import recorded_verdicts
    from tlmsearch.rundir.io import read_verify
    from tlmsearch.rundir.study import load
    from tlmsearch.studies.files import is_study

    path = Path(run_dir) / arch if is_study(run_dir) else Path(run_dir)
    study = load(path)
    vs = recorded_verdicts(study.records, read_verify(path), arch=arch)
    label = vs[0].best if vs else None
    for r in study.records:
        if label is not None and r.profile and str(r.spec) == label:
            return str(r.spec)
    best = sorted(study.full_fidelity(), key=lambda r: r.metric("val_loss"))
    if not best:
        raise UserError(f"--best-from {run_dir}: no finished trial to take a best profile from")
    return str(best[0].spec)


def run(args: argparse.Namespace) -> int:
    if args.action is None:
        raise UserError("ladder needs an action: run, resume, status, report or plan (see tlmsearch ladder --help)")
    if args.action == "plan":
        from tlmsearch.ladders.plan import format_ladder_plan, plan_ladder

        p = plan_ladder(
            build_config(args), gpu=args.gpu, mfu=args.mfu, cpu_flops=args.cpu_flops, step_ms=args.step_ms,
            trial_hours=args.trial_hours, link_gb_s=args.link_gb_s, paired_sd=args.paired_sd,
        )  # fmt: skip
        print(json.dumps(p, indent=2) if args.json else format_ladder_plan(p))
        return 0
    if args.action in ("status", "report"):
        from tlmsearch.ladders.files import damage_text, ladder_damage, load_config

        damage = ladder_damage(args.ladder_dir, load_config(args.ladder_dir))  # not a ladder: one line
        if damage and args.action == "report":
            kept = ", so its report is not rebuilt (the last one is kept)"
            raise UserError(damage_text(args.ladder_dir, damage, kept))
        if args.action == "report" and args.readme_table:
            from tlmsearch.ladders.readme import readme_block
            from tlmsearch.ladders.report import ladder_summary

            print(readme_block(ladder_summary(args.ladder_dir), str(args.ladder_dir).rstrip("/")))
            return 0
        if args.action == "report":
            from tlmsearch.ladders.report import write_ladder_report

            paths = write_ladder_report(args.ladder_dir)
            if args.json:
                print(paths["json"].read_text(), end="")
            else:
                print(json.loads(paths["json"].read_text())["conclusion"])
                print(f"wrote {paths['html']}\n      {paths['md']}\n      {paths['json']}")
            return 0
        print_status(args.ladder_dir, args.json)
        if damage:
            print(f"warning: {damage_text(args.ladder_dir, damage)}", file=sys.stderr)
        return 0
    from tlmsearch.api import ladder, resume_ladder

    if args.action == "resume":
        from tlmsearch.ladders.files import load_config

        load_config(args.ladder_dir)
        plan = {"max_seeds": args.max_seeds, "profiles": args.profiles}
        result = resume_ladder(
            args.ladder_dir, address=args.address, progress=not args.quiet, **plan, **resources(args)
        )
    else:
        cfg = build_config(args)
        result = ladder(cfg, address=args.address, progress=not args.quiet, yes=args.yes, max_hours=args.max_hours)
    print(result.summary["conclusion"])
    return 0


def status_rows(ladder_dir: Any) -> list[dict[str, Any]]:
    from pathlib import Path

    from tlmsearch.analysis.machine_time import machine_time
    from tlmsearch.ladders.files import load_config, read_state
    from tlmsearch.ladders.point_plan import plan_note
    from tlmsearch.rundir.records import read_records

    cfg = load_config(ladder_dir)
    phases = read_state(ladder_dir)["phases"]
    rows = []
    for spec in cfg.specs:
        sub = Path(ladder_dir) / spec.name
        recs = read_records(sub) if sub.is_dir() else []
        rows.append(
            {
                "point": spec.text,
                "name": spec.name,
                "search": phases.get(f"{spec.name}/search", {}).get("status", "pending"),
                "verify": phases.get(f"{spec.name}/verify", {}).get("status", "pending"),
                "runs": sum(r.kind == "verify" and r.status == "complete" for r in recs),
                "plan": plan_note(cfg, sub),
                "machine_time": machine_time(recs).to_dict(),
            }
        )
    return rows


def print_status(ladder_dir: Any, as_json: bool = False) -> None:
    from tlmsearch.analysis.machine_time import MachineTime
    from tlmsearch.ladders.files import load_config, time_left, time_left_line
    from tlmsearch.ladders.report import json_safe, ladder_summary

    rows = status_rows(ladder_dir)
    s = ladder_summary(ladder_dir)
    left = time_left(ladder_dir)
    outcomes = {p["name"]: p["outcome"] for p in s["points"]}
    line = time_left_line(left)
    if as_json:
        doc = {"ladder": str(ladder_dir), "points": rows, "progress": left, "now": line, "conclusion": s["conclusion"]}
        print(json.dumps(json_safe(doc), indent=2))
        return
    looks = load_config(ladder_dir).looks
    design = f", each verified in {looks} group-sequential looks" if looks else ""
    print(f"ladder {s['ladder']} ({ladder_dir}): {s['arch']}, {len(rows)} points{design}; {line}")
    for r in rows:
        print(
            f"  {r['point']:<28} search {r['search']:<8} verify {r['verify']:<8} {r['runs']:>4} runs  "
            f"{outcomes.get(r['name']) or ''}" + (f" ({r['plan']})" if r["plan"] else "")
        )
    print(f"  {s['conclusion']}")
    total = sum((MachineTime.from_dict(r["machine_time"]) for r in rows), MachineTime())
    print(f"  machine time: {total.text()}")
