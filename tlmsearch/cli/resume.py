"""`tlmsearch resume`: continue an interrupted search."""

from __future__ import annotations

import argparse

from tlmsearch.cli.status import print_status

HELP = "continue an interrupted search or study (Ctrl-C, crash) without re-running finished trials"
DESCRIPTION = """\
Continue the search in RUN_DIR where it stopped: finished trials are kept (and never recorded
twice), interrupted trials continue from their last checkpoint, and the sampler carries on
with the same Optuna study. For a study directory (`tlmsearch study`), every phase that
is not done runs again, reusing every finished trial. Resuming unpickles Ray's saved state: resume only run
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
    from tlmsearch.study_files import is_study

    if is_study(args.run_dir):  # a cross-architecture study (`tlmsearch study`)
        from tlmsearch.api import resume_study
        from tlmsearch.cli.study import print_study_status

        result = resume_study(args.run_dir, address=args.address, progress=not args.quiet)
        print_study_status(result.run_dir, args.json)
        return 0
    from tlmsearch.tuning import resume

    study = resume(args.run_dir, address=args.address, progress=not args.quiet)
    print_status(study, as_json=args.json)
    return 0
