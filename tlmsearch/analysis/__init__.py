"""Analysis of search runs: paired statistics, Pareto fronts, the near-optimality verdict,
re-evaluation with seeds (`verify`) and controlled comparisons (`compare`).

The statistics, Pareto and verdict modules are pure Python; `verify` and `compare` train models
and import torch/ray only when called.
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
