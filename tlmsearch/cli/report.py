"""`tlmsearch report`: report.html (offline), summary.md and summary.json for a run."""

from __future__ import annotations

import argparse
import json

from tlmsearch.cli._options import add_verdict_arguments
from tlmsearch.cli.verify import check_levels

HELP = "write report.html (works offline), summary.md and summary.json for a run directory"
DESCRIPTION = """\
Write the answer of a search or comparison run: report.html (plotly embedded, opens without a
network) with the verdict table, Pareto front with the baselines marked, width profiles of the
best trials over cosine and uniform, learning curves, quality against front-load and parallel
coordinates of the sampled parameters; plus summary.md and summary.json.

The verdict needs seed re-evaluations: run `tlmsearch verify RUN_DIR` first.

examples:
  tlmsearch report runs/transformer-knots-tpe-20260101-120000
  tlmsearch report runs/my-search --out /tmp/report --threshold 0.02
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a search or compare run directory")
    p.add_argument("--out", metavar="DIR", help="where to write the files (default: RUN_DIR)")
    add_verdict_arguments(p)
    p.add_argument("--json", action="store_true", help="print summary.json on stdout")


def run(args: argparse.Namespace) -> int:
    from tlmsearch.report import write_report  # not needed for --help

    check_levels(args.threshold, args.confidence)
    _warn_damaged(args.run_dir)
    paths = write_report(
        args.run_dir, args.out, threshold=args.threshold, confidence=args.confidence, method=args.interval
    )
    if args.json:
        print(paths["json"].read_text(), end="")
        return 0
    summary = json.loads(paths["json"].read_text())
    for v in summary["verdicts"]:
        print(f"{v['group']}: {v['headline']}")
    for note in summary["notes"]:
        print(f"note: {note}")
    print(f"wrote {paths['html']}\n      {paths['markdown']}\n      {paths['json']}")
    return 0


def _warn_damaged(run_dir: str) -> None:
    """Say on stderr when damaged lines of trials.jsonl were skipped (the counts omit them)."""
    import sys

    from tlmsearch.rundir.records import damage_note

    note = damage_note(run_dir)
    if note:
        print(note, file=sys.stderr)
