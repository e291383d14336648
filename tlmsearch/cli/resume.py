"""`tlmsearch resume`: continue an interrupted search."""

from __future__ import annotations

import argparse

from tlmsearch.cli._resource_flags import add_resource_flags, resources
from tlmsearch.cli.status import exit_status, print_status

HELP = "continue an interrupted search, study or ladder (Ctrl-C, crash) without re-running finished trials"
DESCRIPTION = """\
Continue the search in RUN_DIR where it stopped: finished trials are kept (and never recorded
twice), interrupted trials continue from their last checkpoint, and the sampler carries on,
re-told from the records. A search is rebuilt from its trials.jsonl alone (Ray Tune's saved
state is not read) and checkpoints load as weights only. For a study (`tlmsearch study`) or a
ladder (`tlmsearch ladder`), every phase that is not done runs again, reusing every finished
trial.

examples:
  tlmsearch resume runs/transformer-knots-tpe-20260101-120000
  tlmsearch resume runs/big --address auto
  tlmsearch resume runs/big --cpus-per-trial 1 --max-concurrent 8   # more trials at once from here on

--cpus-per-trial, --gpus-per-trial and --max-concurrent change the run's resources from here on
(written into its configs, a line each): what a trial holds and how many run at once, never
what it trains, so the records stay one experiment. A run does not move between CPUs and GPUs.

A damaged run directory is repaired where it safely can be (a record or journal line cut by a
crash is removed and kept aside; an Optuna journal that cannot be read is written anew from
trials.jsonl, the source of truth); otherwise one line names the file. A directory being
resumed is locked: a second resume of it is refused. The run directory may have been copied
or moved: it is resumed where it now lies.

exit status: 0 done; 2 bad input or a damaged file; 3 every trial failed; 130 interrupted.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a search, study or ladder run directory")
    p.add_argument("--address", help="join this Ray cluster ('auto' or host:port); default: start Ray locally")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--json", action="store_true", help="print the final status as JSON")
    add_resource_flags(p, ladder=False)


def run(args: argparse.Namespace) -> int:
    from tlmsearch.ladders.files import is_ladder
    from tlmsearch.studies.files import is_study

    if is_ladder(args.run_dir):  # a ladder (`tlmsearch ladder`): as `tlmsearch ladder resume`
        from tlmsearch.api import resume_ladder

        done = resume_ladder(args.run_dir, address=args.address, progress=not args.quiet, **resources(args))
        print(done.summary["conclusion"])
        return 0
    if is_study(args.run_dir):  # a cross-architecture study (`tlmsearch study`)
        from tlmsearch.api import resume_study
        from tlmsearch.cli.study import print_study_status

        result = resume_study(args.run_dir, address=args.address, progress=not args.quiet, **resources(args))
        print_study_status(result.run_dir, args.json)
        return 0
    from tlmsearch.api import resume

    study = resume(args.run_dir, address=args.address, progress=not args.quiet, **resources(args))
    print_status(study, as_json=args.json)
    return exit_status(study)
