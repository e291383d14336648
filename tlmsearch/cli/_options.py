"""Argument groups shared by several subcommands."""

from __future__ import annotations

import argparse

from tlmsearch.core.validate import METHODS

INTERVALS: tuple[str, ...] = METHODS  # the interval methods, checked with the configs (validate.check_method)


def add_verdict_arguments(p: argparse.ArgumentParser, *, intervals: tuple[str, ...] | None = None) -> None:
    """--margin (--threshold), --alpha (--confidence), --interval: how verdicts are decided.

    `intervals`: the interval methods this command takes (default: every one, `INTERVALS`);
    --help offers only those, and argparse refuses the others in one line."""
    intervals = INTERVALS if intervals is None else intervals
    p.add_argument(
        "--margin",
        "--threshold",
        dest="margin",
        type=float,
        default=None,
        help="perplexity gain over cosine that matters, declared before the data (default 0.01 = 1%%); "
        "--threshold is its old name",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=None,
        help="level of each claim, in (0, 0.5) (default 0.05): 'better' and 'near-optimal' are each wrong at most "
        "this often",
    )
    p.add_argument("--confidence", type=float, default=None, help="old form of --alpha: --confidence C = --alpha 1-C")
    p.add_argument(
        "--interval",
        choices=intervals,
        default="t",
        help="interval of the seed-paired statistics: t (default, right for few seeds) or bootstrap (BCa; "
        "refused below 20 seeds)"
        if "bootstrap" in intervals
        else "interval of the seed-paired statistics: t only here (planned verifications have few seeds)",
    )


def verdict_levels(args: argparse.Namespace) -> tuple[float, float]:
    """(margin, alpha) from the flags, refusing bad values in one line that names the flag."""
    from tlmsearch.analysis.verdict import DEFAULT_ALPHA, DEFAULT_MARGIN
    from tlmsearch.errors import UserError

    margin = DEFAULT_MARGIN if args.margin is None else args.margin
    if not 0.0 < margin < 1.0:
        raise UserError(f"--margin={margin} must lie in (0, 1): a relative perplexity gain (0.01 = 1%)")
    if args.alpha is not None and args.confidence is not None:
        raise UserError("give --alpha or --confidence, not both (--confidence C means --alpha 1-C)")
    if args.confidence is not None and not 0.5 < args.confidence < 1.0:
        raise UserError(f"--confidence={args.confidence} must lie in (0.5, 1) (it means --alpha 1-C)")
    alpha = args.alpha if args.alpha is not None else (1.0 - args.confidence if args.confidence else DEFAULT_ALPHA)
    if not 0.0 < alpha < 0.5:
        raise UserError(f"--alpha={alpha} must lie in (0, 0.5)")
    return margin, alpha


def add_price_arguments(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--yes and --max-hours: a long command priced beyond the limit starts only when confirmed."""
    from tlmsearch.costs.price import LIMIT_HOURS

    p.add_argument("--yes", action="store_true", help="start even when priced beyond --max-hours of this machine")
    p.add_argument(
        "--max-hours",
        type=float,
        default=LIMIT_HOURS,
        metavar="H",
        help=f"refuse to start when priced beyond H hours of this machine unless --yes (default {LIMIT_HOURS:g}; "
        "0 = no limit)",
    )
