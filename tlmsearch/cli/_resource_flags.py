"""The resource flags of a resume: what each trial holds and how many run at once from here on."""

from __future__ import annotations

import argparse


def add_resource_flags(p: argparse.ArgumentParser, *, ladder: bool) -> None:
    """--cpus-per-trial, --gpus-per-trial, --workers-per-trial (and, but for a ladder, --max-concurrent) of a
    resume."""
    g = p.add_argument_group("resources from here on (default: the run's)")
    g.add_argument("--cpus-per-trial", type=float, help="CPUs Ray reserves for each trial")
    g.add_argument(
        "--gpus-per-trial",
        type=float,
        help="GPUs per trial; fractions share one GPU (stay on one side of 0); a whole N > 1: N workers of 1 GPU",
    )
    g.add_argument(
        "--workers-per-trial", type=int, help="data-parallel workers per trial, each with the CPUs and GPUs above"
    )
    if not ladder:
        g.add_argument("--max-concurrent", type=int, help="trials at once per phase; 0 = as many as Ray has slots")


def resources(args: argparse.Namespace) -> dict[str, float | None]:
    """The resource flags given (None: keep the run's)."""
    from tlmsearch.tuning.resume_resources import RESOURCE_FIELDS  # lazy: the parser builds without it

    return {k: getattr(args, k) for k in RESOURCE_FIELDS if getattr(args, k, None) is not None}
