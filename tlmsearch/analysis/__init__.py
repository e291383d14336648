"""Analysis of search runs: pure functions over trial records.

Paired statistics (`stats`, on scipy.stats), the three-outcome verdict against a declared
margin (`decision` decides, `verdict` assembles, `headline` words it), the seed planner
(`planning`) and its whole-procedure simulation (`simulation`), records to inputs
(`collect`), what a re-evaluation trains (`plan`) and with how many seeds (`pilot`), Pareto
fronts (`front`; the maths is `tlmsearch.pareto`) and the run's answer as plain data
(`summary`). Nothing here trains or
writes files: re-evaluation and comparisons train in `tlmsearch.tuning`, reports are
`tlmsearch.report.run`'s.
"""

from __future__ import annotations

from tlmsearch.analysis.decision import OUTCOMES
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
from tlmsearch.pareto import dominates, pareto_front

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
