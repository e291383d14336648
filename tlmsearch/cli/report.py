"""`tlmsearch report`: report.html (offline), summary.md and summary.json for a run."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tlmsearch.cli._options import add_verdict_arguments, verdict_levels
from tlmsearch.errors import UserError

HELP = "write report.html (works offline), summary.md and summary.json for a run directory"
DESCRIPTION = """\
Write the answer of a search or comparison run: report.html (plotly embedded, opens without a
network) with the verdict table, Pareto front with the baselines marked, width profiles of the
best trials over cosine and uniform, learning curves, quality against front-load and parallel
coordinates of the sampled parameters; plus summary.md and summary.json.

The verdict needs seed re-evaluations: run `tlmsearch verify RUN_DIR` first.

examples:
  tlmsearch report runs/transformer-knots-tpe-20260101-120000
  tlmsearch report runs/my-search --out /tmp/report --margin 0.02
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a search, compare or study run directory")
    p.add_argument("--out", metavar="DIR", help="where to write the files (default: RUN_DIR)")
    add_verdict_arguments(p)
    p.add_argument("--json", action="store_true", help="print summary.json on stdout")


def run(args: argparse.Namespace) -> int:
    from tlmsearch.ladders.files import is_ladder
    from tlmsearch.studies.files import is_study

    if is_ladder(args.run_dir):  # a ladder decides at the margin and alpha in its ladder.yaml
        from tlmsearch.ladders.report import write_ladder_report

        return _fixed_levels_report(args, "ladder", write_ladder_report)
    if is_study(args.run_dir):  # a study decides at the margin and alpha in its study.yaml
        from tlmsearch.studies.report import write_study_report

        return _fixed_levels_report(args, "study", write_study_report)
    from tlmsearch.cli._damage import damage_noted, writable_run_dir
    from tlmsearch.core.validate import writable_dir
    from tlmsearch.report.run import write_report  # not needed for --help

    margin, alpha = verdict_levels(args)
    if args.out:
        writable_dir(args.out, "--out")  # a file or an unwritable place: one line, nothing written
    else:
        writable_run_dir(args.run_dir, "--out DIR")  # a read-only run is still readable elsewhere
    with damage_noted(args.run_dir):
        paths = write_report(args.run_dir, args.out, margin=margin, alpha=alpha, method=args.interval)
    if args.json:
        print(paths["json"].read_text(), end="")
        return 0
    summary = json.loads(paths["json"].read_text())
    for v in summary["verdicts"]:
        print(f"{v['group']}: {v['headline']}")  # the headline opens with the outcome in words
    for note in summary["notes"]:
        print(f"note: {note}")
    print(f"wrote {paths['html']}\n      {paths['markdown']}\n      {paths['json']}")
    return 0


def _fixed_levels_report(args: argparse.Namespace, kind: str, write: Callable[[Any], dict[str, Path]]) -> int:
    """The report of a study or ladder, whose margin and alpha are fixed in its `<kind>.yaml`."""
    if args.out or args.margin is not None or args.alpha is not None or args.confidence is not None:
        raise UserError(f"a {kind}'s report takes no --out/--margin/--alpha: they are fixed in its {kind}.yaml")
    paths = write(args.run_dir)
    if args.json:
        print(paths["json"].read_text(), end="")
    else:
        print(f"wrote {paths['html']}\n      {paths['md']}\n      {paths['json']}")
    return 0
