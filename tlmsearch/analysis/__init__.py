"""Analysis of search runs: pure functions over trial records.

Paired statistics (`stats`), the near-optimality verdict (`verdict`), records to inputs
(`collect`), what a re-evaluation trains (`plan`), Pareto fronts (`front`; the maths is
`tlmsearch.pareto`) and the run's answer as plain data (`summary`). Nothing here trains or
writes files: re-evaluation and comparisons train in `tlmsearch.tuning`, reports are
`tlmsearch.report`'s.
"""

from __future__ import annotations

from tlmsearch.analysis.stats import (
    Interval,
    bootstrap_ci,
    mean_ci,
    paired_difference,
    paired_ratio,
    spearman,
)
from tlmsearch.analysis.verdict import Comparison, ProfileResult, Verdict, verdict
from tlmsearch.pareto import dominates, pareto_front

__all__ = [
    "Comparison",
    "Interval",
    "ProfileResult",
    "Verdict",
    "bootstrap_ci",
    "dominates",
    "mean_ci",
    "paired_difference",
    "paired_ratio",
    "pareto_front",
    "spearman",
    "verdict",
]
