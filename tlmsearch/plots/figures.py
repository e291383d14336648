"""plotly figures of a study; each `plot_*` draws the matching `tlmsearch.plots.data` function.

Every public function returns a `plotly.graph_objects.Figure`; plotly is imported inside them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tlmsearch.analysis.front import pareto_data
from tlmsearch.plots.data import (
    curves_data,
    front_load_data,
    parallel_data,
    verdict_table_data,
    widths_data,
)
from tlmsearch.rundir.records import SEARCH_KINDS

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go

    from tlmsearch.analysis.verdict import Verdict

COLORS = {"cosine": "#d62728", "uniform": "#7f7f7f", "best": "#1f77b4", "other": "#9ecae1"}


def plot_pareto(
    source: Any, y: str = "val_loss", x: str | None = None, kinds: Sequence[str] = SEARCH_KINDS
) -> go.Figure:
    import plotly.graph_objects as go

    d = pareto_data(source, y=y, x=x, kinds=kinds)
    fig = go.Figure()
    others = [p for p in d.points if p.baseline is None]
    fig.add_trace(
        go.Scatter(
            x=[p.x for p in others],
            y=[p.y for p in others],
            mode="markers",
            name="trials",
            marker={"color": COLORS["other"], "size": 8},
            text=[f"{p.trial_id}: {p.label}" for p in others],
        )
    )
    front = d.front
    fig.add_trace(
        go.Scatter(
            x=[p.x for p in front],
            y=[p.y for p in front],
            mode="lines+markers",
            name="Pareto front",
            line={"color": COLORS["best"], "shape": "hv"},
            text=[f"{p.trial_id}: {p.label}" for p in front],
        )
    )
    for name in sorted({p.baseline for p in d.points if p.baseline}):
        pts = [p for p in d.points if p.baseline == name]
        fig.add_trace(
            go.Scatter(
                x=[p.x for p in pts],
                y=[p.y for p in pts],
                mode="markers",
                name=f"baseline: {name}",
                marker={"color": COLORS.get(name, "#2ca02c"), "size": 13, "symbol": "star"},
                text=[f"{p.trial_id}: {p.label}" for p in pts],
            )
        )
    direction = " (higher is better)" if d.x_maximize else ""
    fig.update_layout(
        title=f"Pareto front: {d.y_name} vs {d.x_name}",
        xaxis_title=d.x_name + direction,
        yaxis_title=f"{d.y_name} (lower is better)",
    )
    return fig


def profiles_figure(
    profiles: Mapping[str, Sequence[int]], title: str = "", roles: Mapping[str, str] | None = None
) -> go.Figure:
    """One line per named profile: x = layer, y = MLP hidden width.

    `roles` may mark a name "cosine" or "uniform" (drawn dashed/dotted in fixed colours); names
    that are themselves "cosine..." or "uniform" get those styles too.
    """
    import plotly.graph_objects as go

    roles = dict(roles or {})
    fig = go.Figure()
    for name, widths in profiles.items():
        role = roles.get(name) or ("cosine" if name.startswith("cosine") else "uniform" if name == "uniform" else "")
        style = {
            "cosine": {"dash": "dash", "color": COLORS["cosine"], "width": 3},
            "uniform": {"dash": "dot", "color": COLORS["uniform"], "width": 3},
        }.get(role, {"width": 2})
        fig.add_trace(
            go.Scatter(x=list(range(len(widths))), y=list(widths), mode="lines+markers", name=name, line=style)
        )
    fig.update_layout(title=title or "Per-layer MLP widths", xaxis_title="layer", yaxis_title="MLP hidden width")
    return fig


def plot_widths(source: Any, k: int = 3, kinds: Sequence[str] = SEARCH_KINDS) -> go.Figure:
    d = widths_data(source, k=k, kinds=kinds)
    names = [s.label + ("" if math.isnan(s.value) else f" ({s.value:.4f})") for s in d.series]
    return profiles_figure(
        {n: s.widths for n, s in zip(names, d.series, strict=True)},
        title="Width profiles of the best trials over cosine and uniform",
        roles={n: s.role for n, s in zip(names, d.series, strict=True)},
    )


def plot_curves(source: Any, metric_name: str = "val_loss", kinds: Sequence[str] = SEARCH_KINDS) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    for c in curves_data(source, metric_name, kinds):
        stopped = c.status != "complete"
        fig.add_trace(
            go.Scatter(
                x=c.steps,
                y=c.values,
                mode="lines",
                name=f"{c.trial_id} {c.label}" + (" (stopped)" if stopped else ""),
                line={"dash": "dot" if stopped else "solid", "width": 1 if stopped else 2},
                opacity=0.5 if stopped else 1,
            )
        )
    fig.update_layout(
        title=f"Learning curves ({metric_name}); dotted: stopped early", xaxis_title="step", yaxis_title=metric_name
    )
    return fig


def plot_front_load(source: Any, metric_name: str = "val_loss", kinds: Sequence[str] = SEARCH_KINDS) -> go.Figure:
    import plotly.graph_objects as go

    pts = front_load_data(source, metric_name, kinds)
    fig = go.Figure()
    names = ["trials"] + sorted({p.baseline for p in pts if p.baseline})
    for name in names:
        group = [p for p in pts if (p.baseline or "trials") == name]
        fig.add_trace(
            go.Scatter(
                x=[p.front_load for p in group],
                y=[p.value for p in group],
                mode="markers",
                name=name,
                text=[f"{p.trial_id}: {p.label}" for p in group],
                marker={
                    "size": 13 if name != "trials" else 8,
                    "symbol": "star" if name != "trials" else "circle",
                    "color": COLORS.get(name, COLORS["other"] if name == "trials" else "#2ca02c"),
                },
            )
        )
    fig.update_layout(
        title=f"{metric_name} against front-load index (0.5 = uniform, < 0.5 = wider early)",
        xaxis_title="front-load index",
        yaxis_title=metric_name,
    )
    return fig


def plot_parallel(source: Any, metric_name: str = "val_loss") -> go.Figure:
    import plotly.graph_objects as go

    d = parallel_data(source, metric_name)
    dims = [{"label": n, "values": col} for n, col in zip(d.names, d.columns, strict=True)]
    dims.append({"label": d.metric_name, "values": d.color})
    fig = go.Figure(
        go.Parcoords(
            line={"color": d.color, "colorscale": "Viridis_r", "showscale": True} if d.color else {},
            dimensions=dims,
        )
    )
    fig.update_layout(title="Sampled parameters of finished trials (colour: " + d.metric_name + ")")
    return fig


def plot_verdict(verdicts: Iterable[Verdict]) -> go.Figure:
    import plotly.graph_objects as go

    verdicts = list(verdicts)
    d = verdict_table_data(verdicts)
    cols = [list(c) for c in zip(*d.rows, strict=True)] if d.rows else [[] for _ in d.header]
    fig = go.Figure(go.Table(header={"values": d.header}, cells={"values": cols}))
    fig.update_layout(
        title="<br>".join(f"{v.group}: {v.headline}" for v in verdicts) or "Verdict",
        height=200 + 30 * len(d.rows),
        title_font_size=12,
    )
    return fig
