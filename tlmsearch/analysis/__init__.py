"""Analysis of search runs: paired statistics, Pareto fronts, the three-outcome verdict
(better / near_optimal / inconclusive against a declared margin), the seed planner,
re-evaluation with seeds (`verify`) and controlled comparisons (`compare`).

The statistics (numpy, scipy.stats), decision, planning, Pareto and verdict modules are pure
functions; `verify` and `compare` train models and import torch/ray only when called.
"""

from __future__ import annotations

from tlmsearch.analysis.decision import OUTCOMES
from tlmsearch.analysis.pareto import dominates, pareto_front
from tlmsearch.analysis.planning import SeedPlan, plan_seeds, seeds_to_decide
from tlmsearch.analysis.stats import (
    Interval,
    RankCorrelation,
    bootstrap_ci,
    mean_ci,
    paired_difference,
    paired_ratio,
    rank_correlation,
    spearman,
)
from tlmsearch.analysis.verdict import Comparison, ProfileResult, Verdict, verdict

__all__ = [
    "OUTCOMES",
    "Comparison",
    "Interval",
    "ProfileResult",
    "RankCorrelation",
    "SeedPlan",
    "Verdict",
    "bootstrap_ci",
    "dominates",
    "mean_ci",
    "paired_difference",
    "paired_ratio",
    "pareto_front",
    "plan_seeds",
    "rank_correlation",
    "seeds_to_decide",
    "spearman",
    "verdict",
]
