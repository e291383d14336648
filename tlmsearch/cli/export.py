"""`tlmsearch export`: a trial's width schedule as a training config of another format."""

from __future__ import annotations

import argparse
import sys

from tlmsearch.errors import UserError
from tlmsearch.export.formats import FORMATS, get_format

# the formats whose export reads --divisor (`ExportInput.divisor`), as each format's row says
DIVISOR_FORMATS: tuple[str, ...] = tuple(name for name, f in FORMATS.items() if f.divisor)

HELP = f"export a trial's per-layer widths: {', '.join(FORMATS)}"
_FORMAT_LINES = "\n".join(
    f"  {f.name:<13} {f.description}\n  {'':<13} widths: {f.exact_rule}" for f in FORMATS.values()
)
DESCRIPTION = f"""\
Export the width schedule of one trial (default: the best) to a training-config format.

formats (and when their readers build exactly the exported widths):
{_FORMAT_LINES}

"best" is the verdict's best when the run has been verified (or is a comparison): the profile
with the lowest mean loss on the seeds the verdict decides on, the one its table ranks first and
`status` names; else the finished search trial with the lowest val_loss. Where a format's
rounding rule cannot reproduce a width exactly, the export says so and lists the widths a reader
will build, and refuses unless --allow-inexact. After writing, it prints how to load the
file and what the test suite checks of that loading.

examples:
  tlmsearch export runs/my-search --format native
  tlmsearch train --config runs/my-search/export/<trial>-native/config.yaml
  tlmsearch export runs/my-search --trial 3f2a_00007 --format nemotron-nas --out /tmp/nas
  tlmsearch export runs/my-search --format hf --weights   # trained weights (a run with --keep-checkpoints)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a search or compare run directory")
    p.add_argument("--trial", default="best", help="'best' (default) or a trial id from trials.jsonl")
    p.add_argument(
        "--format",
        dest="fmt",
        default="native",
        metavar="FORMAT",
        help=f"one of: {', '.join(FORMATS)} (default: native)",
    )
    p.add_argument("--out", metavar="DIR", help="output folder (default: RUN_DIR/export/<trial>-<format>/)")
    p.add_argument(
        "--divisor",
        type=int,
        help=f"{', '.join(f'{n}: {FORMATS[n].divisor}' for n in DIVISOR_FORMATS)} (default: gcd of the widths, exact)",
    )
    p.add_argument(
        "--weights",
        nargs="?",
        const="auto",
        metavar="CHECKPOINT",
        help="hf: also write the trained weights as model.safetensors, from CHECKPOINT (a checkpoint.pt or its "
        "folder) or, without one, from the trial's kept checkpoint (runs kept with --keep-checkpoints)",
    )
    p.add_argument("--stdout", action="store_true", help="print the exported file instead of writing it")
    p.add_argument(
        "--allow-inexact",
        action="store_true",
        help="write a format whose reader builds other widths than the trial's (default: refuse, showing both)",
    )


def run(args: argparse.Namespace) -> int:
    from tlmsearch.cli._damage import damage_noted, writable_run_dir
    from tlmsearch.export.schedule import export_run  # reads run directories: not needed for --help

    get_format(args.fmt)  # one line naming the allowed formats
    if args.divisor is not None and args.fmt not in DIVISOR_FORMATS:
        takes = "; ".join(f"{name} ({FORMATS[name].divisor})" for name in DIVISOR_FORMATS)
        raise UserError(f"--divisor is not used by --format {args.fmt}; only {takes} takes it")
    if args.divisor is not None and args.divisor < 1:
        raise UserError(f"--divisor={args.divisor} must be >= 1")
    if args.out is None and not args.stdout:  # a read-only run is still readable to stdout or elsewhere
        writable_run_dir(args.run_dir, "--stdout or --out DIR")
    with damage_noted(args.run_dir):
        ex, path, why = export_run(
            args.run_dir,
            args.trial,
            args.fmt,
            args.out,
            divisor=args.divisor,
            write=not args.stdout,
            allow_inexact=args.allow_inexact,
            weights=args.weights,
        )
    fmt = get_format(args.fmt)
    if args.stdout:
        print(ex.text, end="")
        print(f"exported {why}", file=sys.stderr)  # what was chosen, and whether it is decided
        print(ex.summary(), file=sys.stderr)
        return 0
    print(f"exported {why}")
    print(ex.summary())
    print(f"wrote {path}")
    assert path is not None
    if ex.loading:
        snippet = ex.loading.format(path=str(path), dir=str(path.parent))
        print("load it with:\n" + "\n".join(f"  {line}" for line in snippet.splitlines()))
    if fmt.checked:
        print(fmt.checked)  # "tested: ...; not tested: ..."
    return 0
