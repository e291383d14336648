"""The Pareto front of a run's finished trials: quality against size or speed.

What `summary.json` lists and the report's Pareto figure draws (`tlmsearch.plots` draws it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from tlmsearch.analysis.collect import baseline_name, label
from tlmsearch.configs.search import OBJECTIVE_METRICS, OBJECTIVES
from tlmsearch.pareto import pareto_front
from tlmsearch.rundir.records import SEARCH_KINDS, as_records, finished


def front_axis(records: Any, objectives: Sequence[str], kinds: Sequence[str] = SEARCH_KINDS) -> str | None:
    """The x metric of a run's real Pareto front, or None when it has one objective only.

    Two declared objectives give their front (val_loss against params, `train_speed` or
    `infer_speed`); a budget sweep (parameter counts differ across trials) gives quality
    against parameters; otherwise there is no second objective, and no front: every
    profile of a budget has the same parameters and FLOPs, and the tokens/s trials report
    while sharing the machine are load noise (the report ranks the trials instead).
    """
    if len(objectives) >= 2:
        return OBJECTIVE_METRICS.get(objectives[1], objectives[1])
    if len({r.metric("params_total") for r in finished(as_records(records), kinds=kinds)}) > 1:
        return "params_total"
    return None


class ParetoPoint(NamedTuple):
    trial_id: str
    x: float
    y: float
    label: str
    baseline: str | None
    on_front: bool


class ParetoData(NamedTuple):
    x_name: str
    y_name: str
    x_maximize: bool
    points: list[ParetoPoint]

    @property
    def two_dimensional(self) -> bool:
        """Whether both axes vary over the points: else the "front" is one vertical or
        horizontal line of points (e.g. parameters as an objective at one budget), and a
        ranking says the same without pretending to a trade-off."""
        return len({p.x for p in self.points}) > 1 and len({p.y for p in self.points}) > 1

    @property
    def front(self) -> list[ParetoPoint]:
        """Front points sorted by x (the line to draw)."""
        return sorted((p for p in self.points if p.on_front), key=lambda p: p.x)


def pareto_data(
    source: Any, y: str = "val_loss", x: str | None = None, kinds: Sequence[str] = SEARCH_KINDS
) -> ParetoData:
    """Quality (`y`, minimised) against `x`: total parameters when the budget varies across
    trials (budget sweeps, minimised), else throughput `tokens_per_s` (maximised)."""
    recs = finished(as_records(source), kinds=kinds, metric_name=y)
    if x is None:
        params = {r.metric("params_total") for r in recs}
        x = "params_total" if len(params) > 1 else "tokens_per_s"
    maximize = x == "mfu" or OBJECTIVES.get(x) == "max"
    recs = [r for r in recs if math.isfinite(r.metric(x))]
    xy = [(r.metric(x), r.metric(y)) for r in recs]
    front = set(pareto_front(xy, minimize=(not maximize, True)))
    points = [
        ParetoPoint(r.trial_id, px, py, label(r), baseline_name(r), i in front)
        for i, (r, (px, py)) in enumerate(zip(recs, xy, strict=True))
    ]
    return ParetoData(x, y, maximize, points)
