"""plotly figures of a study; each `plot_*` draws the matching `tlmsearch.plots.data` function.

Every public function returns a `plotly.graph_objects.Figure`; plotly is imported inside them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tlmsearch.analysis.front import pareto_data
from tlmsearch.noise_floor import floor_text
from tlmsearch.plots.data import (
    curves_data,
    front_load_data,
    parallel_data,
    verdict_table_data,
    widths_data,
)
from tlmsearch.profiles.spec import display_name
from tlmsearch.rundir.records import SEARCH_KINDS

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go

    from tlmsearch.analysis.verdict import Verdict

from tlmsearch.plots.style import COLORS, baseline_style, draw_order, layout_for, short_name, table_height


def _baseline_traces(points: Sequence[Any], x: str, y: str) -> list[dict[str, Any]]:
    """One scatter trace (as keyword arguments) per baseline, each with its own marker,
    cosine last so that it is drawn on top."""
    names = draw_order(sorted({p.baseline for p in points if p.baseline}))
    out = []
    for i, name in enumerate(names):
        pts = [p for p in points if p.baseline == name]
        st = baseline_style(name, i)
        out.append(
            {
                "x": [getattr(p, x) for p in pts],
                "y": [getattr(p, y) for p in pts],
                "mode": "markers",
                "name": f"baseline: {short_name(display_name(name))}",
                "marker": {
                    "color": st.color,
                    "size": st.size,
                    "symbol": st.symbol,
                    "line": {"width": 1, "color": "#222"},
                },
                "text": [f"{p.trial_id}: {p.label}" for p in pts],
                "hovertemplate": "%{text}<br>%{x}, %{y}<extra></extra>",
            }
        )
    return out


def _finish(fig: go.Figure, **layout: Any) -> go.Figure:
    """Title and axes, with the legend under the plot and the height from the legend's rows."""
    fig.update_layout(**layout)
    fig.update_layout(**layout_for([tr.name or "" for tr in fig.data if tr.showlegend is not False]))
    return fig


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
    for kw in _baseline_traces(d.points, "x", "y"):
        fig.add_trace(go.Scatter(**kw))
    direction = " (higher is better)" if d.x_maximize else " (lower is better)"
    return _finish(
        fig,
        title=f"Pareto front: {d.y_name} vs {d.x_name}",
        xaxis_title=d.x_name + direction,
        yaxis_title=f"{d.y_name} (lower is better)",
    )


def profiles_figure(
    profiles: Mapping[str, Sequence[int]], title: str = "", roles: Mapping[str, str] | None = None
) -> go.Figure:
    """One line per named profile: x = layer, y = MLP hidden width.

    `roles` may mark a name "cosine" or "uniform" (drawn dashed/dotted in fixed colours); names
    that are themselves "cosine..." or "uniform" get those styles too. Long names are shortened
    in the legend; the full name is in the hover text.
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
            go.Scatter(
                x=list(range(len(widths))),
                y=list(widths),
                mode="lines+markers",
                name=short_name(display_name(name)),
                line=style,
                text=[name] * len(widths),
                hovertemplate="%{text}<br>layer %{x}: %{y}<extra></extra>",
            )
        )
    return _finish(fig, title=title or "Per-layer MLP widths", xaxis_title="layer", yaxis_title="MLP hidden width")


def plot_widths(source: Any, k: int = 3, kinds: Sequence[str] = SEARCH_KINDS) -> go.Figure:
    """The best trials' MLP widths over cosine and uniform; for joint architectures also their
    block widths (dash-dot, same axis: a width) and query heads (dotted, right axis)."""
    d = widths_data(source, k=k, kinds=kinds)
    names = [s.label + ("" if math.isnan(s.value) else f" ({s.value:.4f})") for s in d.series]
    joint = any(s.heads or s.blocks or s.kv for s in d.series)
    grouped = ", KV heads dashed" if any(s.kv for s in d.series) else ""
    fig = profiles_figure(
        {n: s.widths for n, s in zip(names, d.series, strict=True)},
        title="Width profiles of the best trials over cosine and uniform"
        + (f"; block widths dash-dot, query heads dotted{grouped} (right axis)" if joint else ""),
        roles={n: s.role for n, s in zip(names, d.series, strict=True)},
    )
    if joint:
        _add_joint_axes(fig, names, d.series)
    return fig


def _add_joint_axes(fig: go.Figure, names: Sequence[str], series: Sequence[Any]) -> None:
    """Block widths, query heads and (where they differ from the query heads) key/value heads of
    the series that move them, beside their MLP widths."""
    import plotly.graph_objects as go

    for name, s in zip(names, series, strict=True):
        axes = (
            (s.blocks, "block width", "y", "dashdot"),
            (s.heads, "query heads", "y2", "dot"),
            (s.kv, "KV heads", "y2", "dash"),
        )
        for values, what, axis, dash in axes:
            if values:
                full = f"{name}: {what}"
                fig.add_trace(
                    go.Scatter(
                        x=list(range(len(values))),
                        y=list(values),
                        mode="lines+markers",
                        yaxis=axis,
                        name=short_name(display_name(full)),
                        line={"dash": dash, "width": 1},
                        text=[full] * len(values),
                        hovertemplate="%{text}<br>layer %{x}: %{y}<extra></extra>",
                    )
                )
    fig.update_layout(yaxis2={"title": "query heads", "overlaying": "y", "side": "right", "rangemode": "tozero"})


def plot_curves(source: Any, metric_name: str = "val_loss", kinds: Sequence[str] = SEARCH_KINDS) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    for c in curves_data(source, metric_name, kinds):
        full = f"{c.trial_id} {c.label}" + (" (stopped)" if c.stopped else "")
        fig.add_trace(
            go.Scatter(
                x=c.steps,
                y=c.values,
                mode=c.mode,  # a trial stopped at its first evaluation is a marker, never an invisible line
                name=short_name(display_name(full)),
                line={"dash": "dot" if c.stopped else "solid", "width": 1 if c.stopped else 2},
                marker={"size": 8 if len(c.steps) == 1 else 5, "symbol": "x" if c.stopped else "circle"},
                opacity=0.6 if c.stopped else 1,
                text=[full] * len(c.steps),
                hovertemplate="%{text}<br>step %{x}: %{y}<extra></extra>",
            )
        )
    return _finish(
        fig,
        title=f"Learning curves ({metric_name}); dotted with crosses: stopped early",
        xaxis_title="step",
        yaxis_title=metric_name,
    )


def _shape_points_figure(pts: Sequence[Any], **layout: Any) -> go.Figure:
    """Trials as small circles, each baseline with its own marker (x = `front_load`, y = `value`)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    trials = [p for p in pts if not p.baseline]
    fig.add_trace(
        go.Scatter(
            x=[p.front_load for p in trials],
            y=[p.value for p in trials],
            mode="markers",
            name="trials",
            text=[f"{p.trial_id}: {p.label}" for p in trials],
            marker={"size": 8, "symbol": "circle", "color": COLORS["other"]},
        )
    )
    for kw in _baseline_traces(pts, "front_load", "value"):
        fig.add_trace(go.Scatter(**kw))
    return _finish(fig, **layout)


def plot_front_load(source: Any, metric_name: str = "val_loss", kinds: Sequence[str] = SEARCH_KINDS) -> go.Figure:
    return _shape_points_figure(
        front_load_data(source, metric_name, kinds),
        title=f"{metric_name} against front-load index (0.5 = uniform, < 0.5 = wider early)",
        xaxis_title="front-load index",
        yaxis_title=metric_name,
    )


def plot_ranking(
    source: Any,
    metric_name: str = "val_loss",
    kinds: Sequence[str] = SEARCH_KINDS,
    floor: Mapping[str, Any] | None = None,
) -> go.Figure:
    """Finished trials ranked by `metric_name` (lower is better), baselines with their own
    markers: the figure of a single-objective search at one budget, where a front against
    measured speed would only show machine load. The band above the best is the search's tie
    rule (`floor`: `NoiseFloor.to_dict()`), the one `tlmsearch status` and summary.md state
    (`noise_floor.floor_text`): a trial inside it is the one their tables call a tie."""
    pts = sorted(front_load_data(source, metric_name, kinds), key=lambda p: p.value)
    tie = (floor or {}).get("tie_gap") if metric_name == (floor or {}).get("metric", "val_loss") else None
    note = floor_text(floor) + ("; band: the ties with the best" if tie else "")
    fig = _shape_points_figure(
        [p._replace(front_load=float(i + 1)) for i, p in enumerate(pts)],  # x = rank
        title=f"Finished trials ranked by {metric_name} (one training seed each)<br><sup>{note}</sup>",
        xaxis_title="rank (1 = best)",
        yaxis_title=f"{metric_name} (lower is better)",
    )
    if tie and pts:
        best = pts[0].value
        fig.add_hrect(y0=best, y1=best + tie, fillcolor="#888", opacity=0.2, line_width=0)
    return fig


def scale_axis(values: Sequence[float]) -> tuple[list[float | None], float, float]:
    """One parallel-coordinates axis: `values` scaled to [0, 1] over their finite range (0.5
    when they are all equal, None where a trial has no value), and that range (nan, nan when
    empty)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return [None] * len(values), math.nan, math.nan
    lo, hi = min(finite), max(finite)
    span = hi - lo
    return [None if not math.isfinite(v) else (v - lo) / span if span else 0.5 for v in values], lo, hi


def plot_parallel(source: Any, metric_name: str = "val_loss") -> go.Figure:
    """Parallel coordinates of the sampled parameters and the metric, drawn with scatter lines
    (one per finished trial, coloured by the metric) so the report's small plotly bundle draws
    it (`tlmsearch.plots.bundle`); each axis is scaled to its own range, printed at its ends."""
    import plotly.graph_objects as go
    from plotly.colors import sample_colorscale, sequential

    d = parallel_data(source, metric_name)
    names = [*d.names, d.metric_name]
    axes = [scale_axis(col) for col in [*d.columns, d.color]]
    metric, lo, hi = axes[-1]
    colors = sample_colorscale(sequential.Viridis_r, [0.5 if m is None else m for m in metric]) if d.color else []
    fig = go.Figure()
    x = list(range(len(names)))
    for i, color in enumerate(colors):
        raw = [col[i] for col in [*d.columns, d.color]]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[axis[0][i] for axis in axes],
                mode="lines+markers",
                connectgaps=True,  # a parameter the trial's family lacks is skipped, not a break
                line={"color": color, "width": 1.5},
                marker={"color": color, "size": 5},
                text=[f"{n} = {v:.4g}" for n, v in zip(names, raw, strict=True)],
                hoverinfo="text",
                showlegend=False,
            )
        )
    if colors and hi > lo:  # the metric's colour bar (none for a single value)
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                marker={
                    "color": [lo], "colorscale": "Viridis_r", "cmin": lo, "cmax": hi,
                    "showscale": True, "colorbar": {"title": {"text": d.metric_name}},
                },
                hoverinfo="skip",
                showlegend=False,
            )
        )  # fmt: skip
    for i, (_, low, high) in enumerate(axes):
        fig.add_vline(x=i, line_color="#888", line_width=1)
        if math.isfinite(low):
            fig.add_annotation(x=i, y=-0.06, text=f"{low:.4g}", showarrow=False, font={"size": 10})
            if high > low:  # one value: printed once
                fig.add_annotation(x=i, y=1.06, text=f"{high:.4g}", showarrow=False, font={"size": 10})
    fig.update_layout(
        title="Sampled parameters of finished trials (colour: " + d.metric_name + ")",
        height=480,
        margin={"l": 60, "r": 60, "t": 90, "b": 60},
        xaxis={"tickvals": x, "ticktext": names, "range": [-0.3, len(names) - 0.7], "showgrid": False},
        yaxis={"range": [-0.12, 1.12], "showticklabels": False, "showgrid": False, "zeroline": False},
        plot_bgcolor="white",
    )
    return fig


# characters per line of each verdict-table column before a cell wraps (for the height)
_TABLE_CHARS = (18, 5, 30, 6, 9, 26, 26, 10)


def plot_verdict(verdicts: Iterable[Verdict]) -> go.Figure:
    """The verdict table as a plotly table, tall enough for every (wrapped) row. The HTML
    report renders the same rows as an HTML table; this figure is for notebooks."""
    import plotly.graph_objects as go

    verdicts = list(verdicts)
    d = verdict_table_data(verdicts)
    cols = [list(c) for c in zip(*d.rows, strict=True)] if d.rows else [[] for _ in d.header]
    fig = go.Figure(
        go.Table(
            columnwidth=list(_TABLE_CHARS[: len(d.header)]),
            header={"values": d.header, "align": "left"},
            cells={"values": cols, "align": "left"},
        )
    )
    titles = [f"{v.group}: {v.headline}" for v in verdicts]
    title_lines = sum(max(1, -(-len(t) // 110)) for t in titles) or 1
    fig.update_layout(
        title={"text": "<br>".join(_wrap(t, 110) for t in titles) or "Verdict", "font": {"size": 12}},
        height=table_height(d.rows, _TABLE_CHARS) + 18 * title_lines,
        margin={"l": 10, "r": 10, "t": 30 + 18 * title_lines, "b": 10},
    )
    return fig


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "<br>".join(textwrap.wrap(text, width)) or text
