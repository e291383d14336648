"""`tlmsearch resume`: continue an interrupted search."""

from __future__ import annotations

import argparse

from tlmsearch.cli.status import print_status

HELP = "continue an interrupted search (Ctrl-C, crash) without re-running finished trials"
DESCRIPTION = """\
Continue the search in RUN_DIR where it stopped: finished trials are kept (and never recorded
twice), interrupted trials continue from their last checkpoint, and the sampler carries on
with the same Optuna study. Resuming unpickles Ray's saved state: resume only run
directories you trust.

examples:
  tlmsearch resume runs/transformer-knots-tpe-20260101-120000
  tlmsearch resume runs/big --address auto
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a search run directory (holds search.yaml)")
    p.add_argument("--address", help="join this Ray cluster ('auto' or host:port); default: start Ray locally")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--json", action="store_true", help="print the final status as JSON")


def run(args: argparse.Namespace) -> int:
    from tlmsearch.tuning import resume

    study = resume(args.run_dir, address=args.address, progress=not args.quiet)
    print_status(study, as_json=args.json)
    return 0
