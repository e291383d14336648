"""`tlmsearch study`: the paper's question across architectures in one resumable command."""

from __future__ import annotations

import argparse
import dataclasses
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
from tlmsearch.cli._options import add_price_arguments, add_verdict_arguments, verdict_levels
from tlmsearch.configs.lr_calibration import after_explicit_lr
from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.study import DEFAULT_ARCHS, SEARCH_FIELDS, SEARCH_HELP, STUDY_SEARCH_DEFAULTS, StudyConfig
from tlmsearch.errors import ConfigError, UserError

HELP = "search + verify every architecture, then transfer each one's best profile to the others"
DESCRIPTION = """\
Ask whether cosine tapering (1.5x -> 0.5x) is near-optimal across architectures, in one run
directory runs/<name>/:

  1. for each architecture in --archs (default: {archs}): the noise floor and a search (runs/<name>/<arch>/),
     then `verify` of its --top-k best profiles beside uniform, cosine, the controls (expanding
     cosine, linear, bowtie) and the paper's early / middle / late groups, with planned seeds
     (--seeds auto) and the three-outcome verdict at --margin / --alpha (--looks K: the deciding
     seeds in K group-sequential looks, the candidates a look decides stop training);
  2. a transfer check: each architecture's best profile (the verdict's: lowest verified mean loss) re-trained
     on every other architecture, paired by seed against cosine there (runs/<name>/transfer-<arch>/,
     --transfer-seeds seeds);
  3. the study report: report.html, summary.json, summary.md (verdicts, a cross-architecture
     table of gains over uniform and cosine with intervals, the transfer matrix, the shapes, and
     the paper's 440M figures beside ours where the profiles correspond).

Phases overlap (--phase-order overlap): the next architecture's search trains beside the last
one's verification, on the same CPU slots. The price in hours (each architecture's analytic
FLOPs at the share of this machine's measured matmul peak such a step sustains, or rates
recorded by earlier runs of the shape; nothing trains to price it) is printed before anything
trains, and a study priced beyond --max-hours (default 12) of this machine is refused unless
--yes confirms it; a live line shows each architecture's phase, trials, best so far and time
left. Kill it at any point: `tlmsearch resume runs/<name>` continues without training a
finished trial again; `tlmsearch status runs/<name>` shows the same line and each phase.
`--readme-table runs/<name>` prints the README's table of a finished study.

--random-control (off by default: it nearly doubles the search cost) adds, per architecture,
a random-search companion (runs/<name>/random-<arch>/): the random sampler with the same seed,
fidelity, scheduler and number of trials as the search; the baselines both would start with
are the same runs, so they are shared rather than trained twice (it trains trials - 4 random
profiles). Its best profile is re-trained by the verification beside cosine as the named
control "random-best", and the report sets it against the sampler's best (search-time gap in
noise-floor units, verified gain over cosine): a control for the sampler.

Each search starts with its noise floor (--noise-seeds, default 3; 0 = off): uniform trained
with that many seeds at the trial fidelity (seed SEED is the search's own uniform baseline, the
others are extra "noise" trials the sampler never sees); the sd of their val_loss is shown per
architecture, and search-time gaps under 2 x sqrt(2) sd are marked as ties.

Before that, each search calibrates its learning rate (--lr-calibration, default auto: uniform
at --lr x 1/4, 1/2, 1, 2, 4 for the trial length, one seed; or a list of >= 4 rates; off): the
rate of the lowest final val_loss (diverged = worst) is that architecture's train.lr for its
noise floor, search, verification, random-search companion and the transfer trials trained on
it. `status` and the study summary show each architecture's chosen rate and the grid's losses.
An explicit --lr turns the calibration off unless --lr-calibration is given too.

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
    # the search settings a study sets for every architecture (its `search` template), under their
    # own names as before the template existed, with the study's help and defaults
    not_study = [f.name for f in dataclasses.fields(SearchConfig) if f.name not in SEARCH_FIELDS]
    add_config_arguments(
        g, SearchConfig, section="study", skip=(*_NOT_DERIVED, *not_study), helps=SEARCH_HELP,
        default_text={k: str(v) for k, v in STUDY_SEARCH_DEFAULTS.items()},
    )  # fmt: skip
    g.add_argument("--seeds", metavar="auto|N", help="verification seeds: auto (default: planned) or N >= 2")
    add_verdict_arguments(p, intervals=("t",))  # a planned verification has few seeds: no bootstrap
    add_training_arguments(p, default_text=screening_default_text())
    g = p.add_argument_group("output")
    g.add_argument(
        "--dry-run", action="store_true",
        help="print the resolved config and the price (nothing trains: seconds), then exit",
    )  # fmt: skip
    add_price_arguments(g)
    g.add_argument(
        "--readme-table", metavar="STUDY_DIR",
        help="print the README's table of a finished study (from its summary.json, markers included), then exit",
    )  # fmt: skip
    g.add_argument("--quiet", action="store_true", help="no progress lines")


def build_config(args: argparse.Namespace) -> StudyConfig:
    """The StudyConfig that `--config` plus the flags describe."""
    from tlmsearch.rundir.io import read_yaml

    if args.config and not read_yaml(args.config):  # else an empty file would silently mean every default
        raise UserError(f"{args.config}: holds no settings (an empty or null YAML document)")
    base = StudyConfig.from_dict(read_yaml(args.config), where=args.config) if args.config else StudyConfig()
    # flat, as the flags name them: the study's own fields and its search settings side by side
    data: dict[str, Any] = {**base.flat_dict(), **config_overrides(args, "study")}
    if args.archs is not None:  # "" names no architecture: refused below, never the default
        data["archs"] = parse_names(args.archs, "--archs", "transformer,titans")
    for field in ("preset", "base_width"):
        if getattr(args, field) is not None:
            data[field] = getattr(args, field)
    if args.arch is not None:
        raise UserError("study takes --archs (comma-separated), not --arch")
    if args.seeds is not None:
        if args.seeds == "auto":
            data["seeds"] = 0
        else:  # the rule of verify and plan (validate.check_seed_count)
            from tlmsearch.core.validate import check_seed_count

            seeds = int(args.seeds) if args.seeds.isdigit() else args.seeds
            data["seeds"] = check_seed_count("--seeds", seeds, auto=True)
    if args.margin is not None or args.alpha is not None or args.confidence is not None:
        data["margin"], data["alpha"] = verdict_levels(args)
    pairs = parse_pairs(args.model_pairs, "--model")
    if pairs:
        data["model"] = {**data.get("model", {}), **pairs}
    train, data_overrides = training_overrides(args)
    if "seed" in train:
        data["seed"] = train.pop("seed")
    data["train"] = {**data["train"], **train}
    # an explicit --lr turns the calibration off unless --lr-calibration is given too
    given = "lr_calibration" in config_overrides(args, "study")
    data["lr_calibration"] = after_explicit_lr(data["lr_calibration"], "lr" in train, given)
    data["data"] = {**data["data"], **data_overrides}
    return StudyConfig.from_flat(data)


def run(args: argparse.Namespace) -> int:
    from tlmsearch.studies.cost import estimate

    if args.readme_table:
        from tlmsearch.studies.readme import checked_block, read_summary

        print(checked_block(read_summary(args.readme_table), args.readme_table))
        return 0
    cfg = build_config(args)
    if args.dry_run:
        from tlmsearch.studies.cost import price_arch

        print(cfg.to_yaml(), end="")
        print(estimate(cfg, calibration={a: price_arch(cfg, a) for a in cfg.archs}).text())
        return 0
    from tlmsearch.api import study

    result = study(cfg, address=args.address, progress=not args.quiet, yes=args.yes, max_hours=args.max_hours)
    print_study_status(result.run_dir)
    return 0


def print_study_status(study_dir: Any, as_json: bool = False) -> None:
    """Per architecture: each phase's status, trials so far, and the verdict when there is one."""
    import dataclasses
    import json
    import sys
    from pathlib import Path

    from tlmsearch.analysis.machine_time import MachineTime, run_times
    from tlmsearch.analysis.rate_check import short_text
    from tlmsearch.studies.files import damage_text, load_config, read_state, study_damage
    from tlmsearch.studies.progress import snapshot, study_line, time_left
    from tlmsearch.studies.report import arch_rate_check, floor_text, lr_short, study_summary

    cfg = load_config(study_dir)
    phases = read_state(study_dir)["phases"]
    damage = study_damage(study_dir, cfg)
    rows = study_progress(study_dir, cfg, phases)
    _, now = snapshot(study_dir)  # what the live view of a running study shows
    left = time_left(cfg, study_dir, now)
    line = study_line(cfg.name, now, left)
    runs = run_times(study_dir)  # the architectures' runs and any other (a random-search control): read once
    spent = {arch: sum((t for p, t in runs.items() if p.parts[:1] == (arch,)), MachineTime()) for arch in cfg.archs}
    total = sum(runs.values(), MachineTime())
    if as_json:
        now_archs = [dataclasses.asdict(r) for r in now]
        out = {"study": str(study_dir), "phases": phases, "archs": rows, "now": line, "now_archs": now_archs}
        out["machine_time"] = {"total": total.to_dict(), **{a: t.to_dict() for a, t in spent.items()}}
        print(json.dumps({**out, "seconds_left": left, "damage": damage}, indent=2))
        if damage:
            print(f"warning: {damage_text(study_dir, damage)}", file=sys.stderr)
        return
    print(line)
    design = f"; each verified in {cfg.looks} group-sequential looks" if cfg.looks else ""
    print(f"study {cfg.name} ({study_dir}): {', '.join(cfg.archs)}{design}")
    for r in rows:
        print(
            f"  {r['arch']:<16} search {r['search']:<8} {r['search_trials']}/{cfg.search.trials} trials  "
            f"verify {r['verify']:<8} {r['verify_trials']} runs{_rate_runs(r['rate_check_trials'])}  "
            f"transfer {r['transfer']:<8} "
            f"{r['transfer_trials']} runs  lr {lr_short(r['lr'])}  noise floor {floor_text(r['noise_floor'])}  "
            f"{r['outcome'] or ''}"
            + ("  DAMAGED (see the warning)" if _names(damage, Path(study_dir) / r["arch"]) else "")
        )
        if cfg.random_control:
            print(f"  {'':<16} random-search control {r['random']:<8} {r['random_trials']} trials")
        if r["verify"] == "done":
            try:
                checks = [short_text(c) for c in arch_rate_check(Path(study_dir) / r["arch"])]
            except ConfigError as e:  # a damaged verify.json: the status still answers, and says so
                checks = [f"unreadable: {e}"]
            for text in checks:
                print(f"  {'':<16} learning-rate check: {text}")
    report = phases.get("report", {}).get("status", "pending")
    print(f"  report {report}")
    each = ", ".join(f"{a} {t.wall_s / 3600:.2f} h" for a, t in spent.items())
    print(f"  machine time: {total.text()}; by architecture: {each}")
    if damage:  # the rows above read the damaged records as they are: say so, loudly
        print("  answer: not shown: the study is damaged (see the warning)")
        print(f"warning: {damage_text(study_dir, damage)}", file=sys.stderr)
    elif report == "done":
        print(f"  answer: {study_summary(study_dir)['answer']}")


def _rate_runs(n: int) -> str:
    """The learning-rate check's runs beside the verification's, when it has any."""
    return f" (+{n} rate check)" if n else ""


def _names(problems: list[str], path: Any) -> bool:
    """Whether one of `problems` is about `path` or a file in it."""
    return any(f"{path} " in p or f"{path}/" in p for p in problems)


def study_progress(study_dir: Any, cfg: StudyConfig, phases: dict[str, Any]) -> list[dict[str, Any]]:
    from pathlib import Path

    from tlmsearch.rundir.records import NOISE_KIND, RATE_KIND, SEARCH_KINDS, read_records
    from tlmsearch.studies.files import TRANSFER_KIND, random_dir, transfer_dir
    from tlmsearch.studies.report import arch_floor, arch_lr

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
                "noise_trials": sum(r.kind == NOISE_KIND for r in recs),
                "random": phases.get(f"{arch}/random", {}).get("status", "pending"),
                "random_trials": len(read_records(random_dir(study_dir, arch))),
                "noise_floor": arch_floor(Path(study_dir) / arch),
                "lr": arch_lr(Path(study_dir) / arch),  # the rate its trials train at, and its calibration
                "verify_trials": sum(r.kind == "verify" for r in recs),
                "rate_check_trials": sum(r.kind == RATE_KIND for r in recs),
                "transfer_trials": sum(r.kind == TRANSFER_KIND for r in moved),
                "outcome": phases.get(f"{arch}/verify", {}).get("outcome"),
            }
        )
    return rows
