"""Argument groups shared by several subcommands."""

from __future__ import annotations

import argparse


def add_verdict_arguments(p: argparse.ArgumentParser) -> None:
    """--threshold, --confidence, --interval: how verdicts and their intervals are computed."""
    p.add_argument(
        "--threshold",
        type=float,
        default=0.01,
        help="perplexity gain over cosine that counts as better (default 0.01 = 1%%)",
    )
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level of intervals (default 0.95)")
    p.add_argument(
        "--interval",
        choices=("t", "bootstrap"),
        default="t",
        help="interval of the seed-paired statistics: t (default, right for few seeds) or bootstrap",
    )
