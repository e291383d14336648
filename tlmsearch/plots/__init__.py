"""Figures of a study, in two steps: plot data (`tlmsearch.plots.data`, plain NamedTuples,
tested) then plotly figures (`tlmsearch.plots.figures`).

Every public `plot_*` function takes a `Study` (anything with `.records`) or a list of trial
records and returns a `plotly.graph_objects.Figure`; the matching `*_data` function computes
what it draws. Importing this package does not import plotly.
"""

from __future__ import annotations

from tlmsearch.analysis.front import ParetoData, ParetoPoint, pareto_data
from tlmsearch.plots.data import (
    Curve,
    ParallelData,
    ShapePoint,
    TableData,
    WidthsData,
    WidthSeries,
    curves_data,
    front_load_data,
    parallel_data,
    verdict_table_data,
    widths_data,
)
from tlmsearch.plots.figures import (
    COLORS,
    plot_curves,
    plot_front_load,
    plot_parallel,
    plot_pareto,
    plot_ranking,
    plot_verdict,
    plot_widths,
    profiles_figure,
)

__all__ = [
    "COLORS",
    "Curve",
    "ParallelData",
    "ParetoData",
    "ParetoPoint",
    "ShapePoint",
    "TableData",
    "WidthSeries",
    "WidthsData",
    "curves_data",
    "front_load_data",
    "parallel_data",
    "pareto_data",
    "plot_curves",
    "plot_front_load",
    "plot_parallel",
    "plot_pareto",
    "plot_ranking",
    "plot_verdict",
    "plot_widths",
    "profiles_figure",
    "verdict_table_data",
    "widths_data",
]
