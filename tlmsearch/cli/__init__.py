"""The `tlmsearch` command line: a thin layer over the Python API.

Each subcommand lives in its own module under `tlmsearch.cli` and exposes `HELP` (one line),
`add_arguments(parser)` and `run(args) -> int`. The commands that train share one set of model,
training and data flags derived from the config dataclasses (`tlmsearch.cli._config_args`).
At import time those modules load only the bottom layer (configs, presets, profiles, spaces,
the export-format table); everything else (run directories, reports, torch, Ray) is imported
inside `run`, so `tlmsearch --help` answers at once.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from tlmsearch.errors import UserError, file_system_message

# subcommand -> module under tlmsearch.cli (listed in the order `--help` shows them)
COMMANDS: dict[str, str] = {
    "quickstart": "quickstart",
    "profiles": "profiles",
    "data": "data",
    "train": "train",
    "search": "search",
    "study": "study",
    "ladder": "ladder",
    "resume": "resume",
    "status": "status",
    "verify": "verify",
    "compare": "compare",
    "report": "report",
    "export": "export",
    "plan": "plan",
}

# the commands that run trials on Ray (they take --verbose)
RAY_COMMANDS = ("quickstart", "search", "resume", "verify", "compare")

DESCRIPTION = """\
Search how a language model's MLP width should be spread over its layers under a fixed
parameter budget, and find out whether cosine tapering (1.5x -> 0.5x) is near-optimal for
your architecture.

typical session:
  tlmsearch profiles --layers 12 --base-width 512 --family cosine --family uniform
  tlmsearch search --arch transformer --preset cpu-s --space knots --trials 32
  tlmsearch verify runs/<name> && tlmsearch report runs/<name>
  tlmsearch export runs/<name> --format native
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # one line and status 2, like every other user error; the usage of a command with all
        # its derived flags runs to dozens of lines, so point at --help instead of printing it
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tlmsearch", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    from tlmsearch import __version__

    parser.add_argument("--version", action="version", version=f"tlmsearch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(f"tlmsearch.cli.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tlmsearch.cli.{module_name}":
                raise
            continue  # subcommand not built yet
        p = sub.add_parser(
            name,
            help=module.HELP,
            description=getattr(module, "DESCRIPTION", module.HELP),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
        if name in RAY_COMMANDS:
            p.add_argument(
                "--verbose", action="store_true", help="also show Ray's and Optuna's own messages (default: hidden)"
            )
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    if getattr(args, "verbose", False):
        os.environ["TLMSEARCH_VERBOSE"] = "1"  # read by tlmsearch.tuning.runner (and Ray's workers)
    if args.command in (*RAY_COMMANDS, "study", "ladder"):  # a Ctrl-C from the first instruction to the last
        from tlmsearch.tuning import interrupts

        interrupts.watch()
        interrupts.cli_owns_the_line()  # the handler below prints the one line, with its resume command
    try:
        return int(args._run(args) or 0)
    except UserError as exc:
        _discard_unstarted()
        print(f"tlmsearch {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"tlmsearch {args.command}: interrupted{_resume_hint(args, argv)}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (OSError, RuntimeError) as exc:
        # the file system as it is (a read-only run directory, a symlink loop, a full disk, a
        # folder where a file belongs): one line naming the path, whichever command met it
        line = file_system_message(exc)
        if line is None:
            raise  # a bug: keep its traceback
        _discard_unstarted()
        if isinstance(exc, OSError) and exc.filename is None:  # stdout cannot take what is still buffered
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"tlmsearch {args.command}: error: {line}", file=sys.stderr)
        return 2
    finally:
        layout = sys.modules.get("tlmsearch.rundir.layout")
        if layout is not None:  # the next command (in this process: tests, a notebook) starts afresh
            layout.forget_created()
        interrupts_module = sys.modules.get("tlmsearch.tuning.interrupts")
        if interrupts_module is not None:
            interrupts_module.cli_done()


def _resume_hint(args: argparse.Namespace, argv: Sequence[str] | None) -> str:
    """ "; resume with: COMMAND" for the command interrupted, from its first instant to its last: the
    run directory it made (a ladder's, a study's or a search's, whichever it is by now), or the one
    it was continuing; a directory that holds nothing recorded yet is removed and the command
    itself is the one to run again. "" for a command that leaves nothing to resume."""
    import shlex
    from pathlib import Path

    layout = sys.modules.get("tlmsearch.rundir.layout")
    made = layout.created() if layout is not None else []
    again = "tlmsearch " + shlex.join(sys.argv[1:] if argv is None else list(argv))
    if args.command == "resume" or getattr(args, "action", None) == "resume":
        folder = getattr(args, "run_dir", None) or getattr(args, "ladder_dir", None)
        word = "ladder resume" if args.command == "ladder" else "resume"
        return f"; resume with: tlmsearch {word} {Path(folder)}" if folder else ""
    if made:
        top = made[0]
        if (top / "ladder.yaml").is_file():
            return f"; resume with: tlmsearch ladder resume {top}"
        if (top / "study.yaml").is_file() or (top / "search.yaml").is_file():
            return f"; resume with: tlmsearch resume {top}"
        if layout is not None and top in layout.discard_unstarted():
            return f"; nothing was recorded yet ({top} removed): resume with the same command, {again}"
        return ""
    if args.command == "verify":  # verify reuses every finished run
        return f"; resume with the same command: {again}"
    return ""


def _discard_unstarted() -> None:
    """A command refused after it made its run directory leaves none behind (nothing was recorded
    in it), so the corrected command can use the same name."""
    layout = sys.modules.get("tlmsearch.rundir.layout")  # never imported just for this
    if layout is not None:
        layout.discard_unstarted()
