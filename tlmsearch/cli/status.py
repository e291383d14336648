"""`tlmsearch status`: what a search run holds so far (reads files only; Ray not needed)."""

from __future__ import annotations

import argparse
import json
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.rundir.study import Study

HELP = "show a search's progress: trials complete / stopped / failed, best so far, Pareto front"
DESCRIPTION = """\
Summarise the search in RUN_DIR from its trials.jsonl: how many trials ended and how, the
best full-fidelity trials, the Pareto front for two objectives, and the baselines. Works
while the search runs (the file grows as trials end). A study's directory shows each
architecture's phases and verdicts; a ladder's, each point's phases, runs and verdict.

examples:
  tlmsearch status runs/<name>
  tlmsearch status runs/<name> --json | jq .best
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a search, study or ladder directory")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--top", type=int, default=5, help="how many best trials to show (default 5)")


def own_kinds(study: Any) -> tuple[str, ...]:
    """The record kinds that are the run's own trials: a compare run's are "compare" records
    (it writes compare.json), a search's are its baselines and sampled trials."""
    from tlmsearch.rundir.layout import COMPARE
    from tlmsearch.rundir.records import SEARCH_KINDS

    return ("compare",) if (study.run_dir / COMPARE).is_file() else SEARCH_KINDS


def status_dict(study: Any, top: int = 5) -> dict[str, Any]:
    """The status of a study as plain data (what `--json` prints)."""
    from tlmsearch.core.validate import check_top

    check_top("--top", top)  # -1 would list all but the worst; the bound of verify --top-k
    from tlmsearch.analysis.machine_time import machine_time
    from tlmsearch.analysis.regime import record_values, regime_of
    from tlmsearch.noise_floor import ranking_gaps, screen_ties
    from tlmsearch.rundir.axes import layer_axes
    from tlmsearch.rundir.lr import rate_line
    from tlmsearch.rundir.study import objective_value  # run-directory readers: not needed for --help

    cfg = study.config
    kinds = own_kinds(study)
    own = [r for r in study.records if r.kind in kinds]

    def brief(r: Any) -> dict[str, Any]:
        return {
            "trial_id": r.trial_id, "number": r.number, "kind": r.kind, "baseline": r.baseline,
            "profile": str(r.spec), "widths": list(r.widths), "status": r.status, **layer_axes(r),
            **{o: objective_value(r, o) for o in cfg.objectives},
            **{k: v if math.isfinite(v := record_values(r)[k]) else None for k in ("tokens_per_param", "epochs")},
        }  # fmt: skip

    finished = study.full_fidelity() if "compare" not in kinds else [r for r in own if r.finished()]
    full = sorted(finished, key=lambda r: objective_value(r, "val_loss"))
    front_ids = set(study.pareto_front()["trial_id"]) if cfg.multi_objective else set()
    floor = study.noise_floor() if "compare" not in kinds else None
    calibration = study.lr_calibration() if "compare" not in kinds else None
    best = [brief(r) for r in full[:top]]
    sd = floor.sd if floor is not None and floor.usable else math.nan
    for row, gap in zip(best, ranking_gaps([row["val_loss"] for row in best], sd), strict=True):
        row.update(gap)  # gap to the best (nats), in floor units, tie with the best
    return {
        "name": cfg.name,
        "run_dir": str(study.run_dir),
        "objectives": list(cfg.objectives),
        "planned": cfg.trials,
        "kinds": list(kinds),
        "ended": len(own),
        "counts": {s: sum(r.status == s for r in own) for s in ("complete", "stopped", "failed")},
        "verify": sum(r.kind == "verify" for r in study.records),
        "noise_floor": floor.to_dict() if floor is not None else None,
        "regime": regime.to_dict() if (regime := regime_of(finished)) is not None else None,
        "noise": sum(r.kind == "noise" for r in study.records),
        "lr": cfg.train.lr,
        "lr_calibration": calibration.to_dict() if calibration is not None else None,
        "lr_line": rate_line(cfg, calibration),
        "rate_check": _rate_check(study) if "compare" not in kinds else [],
        "verdicts": _verdicts(study),
        "verification": _history(study),
        "best": best,
        "screen_ties": screen_ties([objective_value(r, "val_loss") for r in full], sd) if floor is not None else None,
        "pareto": [brief(r) for r in full if r.trial_id in front_ids],
        "baselines": [brief(r) for r in study.records if r.kind == "baseline"],
        "failed": [{"trial_id": r.trial_id, "reason": r.reason} for r in study.records if r.status == "failed"],
        "machine_time": machine_time(study.records).to_dict(),
    }


def _verdicts(study: Any) -> list[dict[str, Any]]:
    """The run's verdicts as `tlmsearch report` gives them, at the margin and alpha its verify
    decided with (verify.json); [] before a finished verify or compare, [{"error": ...}] when
    verify.json is damaged."""
    from tlmsearch.analysis.summary import recorded_verdicts
    from tlmsearch.errors import ConfigError
    from tlmsearch.rundir.io import read_verify
    from tlmsearch.rundir.layout import VERIFY as VERIFY_FILE

    try:
        plan = read_verify(study.run_dir)
    except ConfigError as e:
        return [{"error": str(e)}]
    try:
        found = recorded_verdicts(study.records, plan, arch=study.config.arch, space=study.config.space)
    except (ConfigError, TypeError, ValueError) as e:  # levels damaged by hand: status still answers
        return [{"error": f"{VERIFY_FILE}: {e}"}]
    # "best": the verdict's, which the report's table ranks first and `export` exports
    return [{"group": v.group, "outcome": v.outcome, "best": v.best, "headline": v.headline} for v in found]


def _history(study: Any) -> str | None:
    """What alpha the verification's whole history spent, and whether it was extended after its
    last look as a new stage (`analysis.sequential_extend`); None before one (or when damaged)."""
    from tlmsearch.analysis.sequential_extend import history_line
    from tlmsearch.errors import ConfigError
    from tlmsearch.rundir.io import read_verify

    try:
        return history_line(read_verify(study.run_dir))
    except (ConfigError, TypeError, ValueError):
        return None


def _rate_check(study: Any) -> list[dict[str, Any]]:
    """verify's learning-rate check (`analysis.rate_check`), [] before one, [{"error": ...}] when
    verify.json is damaged."""
    from tlmsearch.analysis.rate_check import rate_checks
    from tlmsearch.errors import ConfigError
    from tlmsearch.rundir.io import read_verify

    try:
        return [c.to_dict() for c in rate_checks(study.records, read_verify(study.run_dir).get("rate_check"))]
    except ConfigError as e:  # a damaged verify.json: status still answers, and says so
        return [{"error": str(e)}]


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "nan" if math.isnan(x) else f"{x:.4g}" if abs(x) >= 1e4 else f"{x:.4f}"
    return str(x)


def print_status(study: Any, *, as_json: bool = False, top: int = 5) -> None:
    from tlmsearch.analysis.machine_time import machine_text
    from tlmsearch.noise_floor import floor_text, gap_text, screen_text
    from tlmsearch.profiles.spec import display_name
    from tlmsearch.rundir.axes import axes_text

    s = status_dict(study, top)
    if as_json:
        print(json.dumps(s, indent=2))
        return
    c = s["counts"]
    print(f"{s['name']}  ({s['run_dir']})")
    print(
        f"trials: {s['ended']}/{s['planned']} ended: {c['complete']} complete, {c['stopped']} stopped, "
        f"{c['failed']} failed; objectives: {', '.join(s['objectives'])}"
        + (f"; {s['noise']} noise-floor trials" if s["noise"] else "")
        + (f"; {s['verify']} verify trials" if s["verify"] else "")
    )
    print(f"machine time: {machine_text(s['machine_time'])}")
    if s["noise_floor"] is not None or s["kinds"] != ["compare"]:
        print(floor_text(s["noise_floor"]))  # the rule summary.md and the report state, in the same words
    if s["kinds"] != ["compare"]:
        print(s["lr_line"])
        for line in (s["lr_calibration"] or {}).get("warnings", []):
            print(line)
    if s["regime"] is not None:
        print(s["regime"]["text"])
    for v in s["verdicts"]:  # the headline opens with the outcome in words
        print(f"verdict: unreadable: {v['error']}" if "error" in v else f"verdict ({v['group']}): {v['headline']}")
    if s.get("verification"):
        print(f"verification: {s['verification']}")
    if not s["verdicts"] and s["kinds"] != ["compare"]:
        print(f"verdict: none yet (`tlmsearch verify {s['run_dir']}` re-trains the best with fresh seeds and decides)")
    for check in s["rate_check"]:
        from tlmsearch.analysis.rate_check import short_text

        if "error" in check:
            print(f"learning-rate check: unreadable: {check['error']}")
        else:
            print(f"learning-rate check ({check['group']}, {check['candidate']} vs cosine): {short_text(check)}")
    for title, rows in (
        ("best (full fidelity)", s["best"]),
        ("Pareto front", s["pareto"]),
        ("baselines", s["baselines"]),
    ):
        if not rows:
            continue
        print(f"{title}:")
        for r in rows:
            values = "  ".join(f"{o}={_fmt(r[o])}" for o in s["objectives"])
            gap = f"  {gap_text(r) if r is not rows[0] else 'best':<27}" if title.startswith("best") else ""
            print(f"  {r['trial_id']:>10}  {r['kind']:<8} {r['status']:<8} {values}{gap}  {display_name(r['profile'])}")
            if (axes := axes_text(r)) is not None:  # a joint architecture: every axis, per layer
                print(f"  {'':>10}  per layer: {axes}")
        if title.startswith("best") and s["screen_ties"]:
            print(f"  {screen_text(s['screen_ties'])}")
    for f in s["failed"]:
        print(f"failed {f['trial_id']}: {f['reason']}")


def run(args: argparse.Namespace) -> int:
    from tlmsearch.ladders.files import is_ladder
    from tlmsearch.studies.files import is_study

    if is_ladder(args.run_dir):  # a ladder: as `tlmsearch ladder status`
        from tlmsearch.cli.ladder import print_status as print_ladder_status

        print_ladder_status(args.run_dir, args.json)
        return 0
    if is_study(args.run_dir):  # a cross-architecture study: each architecture's phases
        from tlmsearch.cli.study import print_study_status

        print_study_status(args.run_dir, args.json)
        return 0
    from tlmsearch.cli._damage import damage_noted
    from tlmsearch.rundir.study import load

    with damage_noted(args.run_dir):
        print_status(load(args.run_dir), as_json=args.json, top=args.top)
    return 0


EVERY_TRIAL_FAILED = 3  # the exit status of a search whose every trial failed


def exit_status(study: Study) -> int:
    """0, or `EVERY_TRIAL_FAILED` (with one line on stderr) when trials ran and every one failed."""
    import sys

    counts = study.counts()
    if counts["failed"] and not counts["complete"] and not counts["stopped"]:
        print(
            f"tlmsearch: error: all {counts['failed']} trials failed; see their errors with "
            f"`tlmsearch status {study.run_dir}`",
            file=sys.stderr,
        )
        return EVERY_TRIAL_FAILED
    return 0
