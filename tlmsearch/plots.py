"""Figures of a study, in two steps: plot data (plain NamedTuples, tested) then plotly figures.

Every public `plot_*` function takes a `Study` (anything with `.records`) or a list of trial
records and returns a `plotly.graph_objects.Figure`; the matching `*_data` function computes
what it draws. plotly is imported only inside the drawing functions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from tlmsearch.analysis.collect import SEARCH_KINDS, as_dict, baseline_name, finished, label, metric, ranked
from tlmsearch.analysis.pareto import pareto_front

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go

    from tlmsearch.analysis.verdict import Verdict

COLORS = {"cosine": "#d62728", "uniform": "#7f7f7f", "best": "#1f77b4", "other": "#9ecae1"}


def _records(source: Any) -> list[dict[str, Any]]:
    records = source.records if hasattr(source, "records") else source
    return [as_dict(r) for r in records]


# ----------------------------------------------------------------------------- pareto


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
    def front(self) -> list[ParetoPoint]:
        """Front points sorted by x (the line to draw)."""
        return sorted((p for p in self.points if p.on_front), key=lambda p: p.x)


def pareto_data(
    source: Any, y: str = "val_loss", x: str | None = None, kinds: Sequence[str] = SEARCH_KINDS
) -> ParetoData:
    """Quality (`y`, minimised) against `x`: total parameters when the budget varies across
    trials (budget sweeps, minimised), else throughput `tokens_per_s` (maximised)."""
    recs = finished(_records(source), kinds=kinds, metric_name=y)
    if x is None:
        params = {metric(r, "params_total") for r in recs}
        x = "params_total" if len(params) > 1 else "tokens_per_s"
    maximize = x in ("tokens_per_s", "mfu")
    recs = [r for r in recs if math.isfinite(metric(r, x))]
    xy = [(metric(r, x), metric(r, y)) for r in recs]
    front = set(pareto_front(xy, minimize=(not maximize, True)))
    points = [
        ParetoPoint(r["trial_id"], px, py, label(r), baseline_name(r), i in front)
        for i, (r, (px, py)) in enumerate(zip(recs, xy, strict=True))
    ]
    return ParetoData(x, y, maximize, points)


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


# ----------------------------------------------------------------------------- widths


class WidthSeries(NamedTuple):
    label: str
    role: str  # "best" | "cosine" | "uniform"
    widths: list[int]
    value: float  # the record's final metric (nan for a computed reference)


class WidthsData(NamedTuple):
    layers: list[int]
    series: list[WidthSeries]


def widths_data(
    source: Any, k: int = 3, metric_name: str = "val_loss", kinds: Sequence[str] = SEARCH_KINDS
) -> WidthsData:
    """The `k` best finished trials' widths, with cosine and uniform of the same budget."""
    recs = ranked(_records(source), metric_name, kinds)
    series: list[WidthSeries] = []
    seen: set[tuple[int, ...]] = set()
    for r in recs:
        if len([s for s in series if s.role == "best"]) >= k:
            break
        if tuple(r["widths"]) in seen or baseline_name(r) in ("cosine", "uniform"):
            continue
        seen.add(tuple(r["widths"]))
        series.append(WidthSeries(f"#{r['trial_id']} {label(r)}", "best", list(r["widths"]), metric(r, metric_name)))
    budget = recs[0].get("budget") if recs else None
    for name in ("cosine", "uniform"):
        rec = next((r for r in recs if baseline_name(r) == name), None)
        if rec is not None:
            series.append(WidthSeries(name, name, list(rec["widths"]), metric(rec, metric_name)))
        elif budget:
            series.append(WidthSeries(name, name, _baseline_widths(name, budget), math.nan))
    n = max((len(s.widths) for s in series), default=0)
    return WidthsData(list(range(n)), series)


def _baseline_widths(name: str, budget: dict[str, Any]) -> list[int]:
    from tlmsearch.profiles import Budget, ProfileSpec

    return list(ProfileSpec(family=name).widths(Budget.from_dict(budget)))


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


# ----------------------------------------------------------------------------- learning curves


class Curve(NamedTuple):
    trial_id: str
    label: str
    status: str
    kind: str
    steps: list[float]
    values: list[float]


def curves_data(source: Any, metric_name: str = "val_loss", kinds: Sequence[str] = SEARCH_KINDS) -> list[Curve]:
    """One curve per trial of `kinds` that reported at least one evaluation."""
    out = []
    for r in _records(source):
        if r.get("kind") not in kinds:
            continue
        pts = [(c.get("step"), c.get(metric_name)) for c in r.get("curve") or ()]
        pts = [(float(s), float(v)) for s, v in pts if s is not None and v is not None]
        if pts:
            out.append(
                Curve(
                    r["trial_id"],
                    label(r),
                    r.get("status", ""),
                    r.get("kind", ""),
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                )
            )
    return out


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


# ----------------------------------------------------------------------------- front-load


class ShapePoint(NamedTuple):
    trial_id: str
    front_load: float
    value: float
    label: str
    baseline: str | None


def front_load_data(
    source: Any, metric_name: str = "val_loss", kinds: Sequence[str] = SEARCH_KINDS
) -> list[ShapePoint]:
    out = []
    for r in finished(_records(source), kinds=kinds, metric_name=metric_name):
        fl = (r.get("shape") or {}).get("front_load")
        if fl is not None:
            out.append(ShapePoint(r["trial_id"], float(fl), metric(r, metric_name), label(r), baseline_name(r)))
    return out


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


# ----------------------------------------------------------------------------- parallel coordinates


class ParallelData(NamedTuple):
    names: list[str]  # sampled parameter names (numeric ones only)
    columns: list[list[float]]  # one column per name, nan where a trial lacks the parameter
    color: list[float]  # the metric
    metric_name: str


def parallel_data(source: Any, metric_name: str = "val_loss") -> ParallelData:
    recs = [r for r in finished(_records(source), kinds=("sampled",), metric_name=metric_name) if r.get("params")]
    names = sorted({k for r in recs for k, v in r["params"].items() if _is_number(v)})
    columns = [[float(r["params"][n]) if _is_number(r["params"].get(n)) else math.nan for r in recs] for n in names]
    return ParallelData(names, columns, [metric(r, metric_name) for r in recs], metric_name)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


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


# ----------------------------------------------------------------------------- verdict table


class TableData(NamedTuple):
    header: list[str]
    rows: list[list[str]]


def _ci(iv: dict[str, Any] | None) -> str:
    if not iv:
        return ""
    return f"{iv['estimate']:+.2%} [{iv['low']:+.2%}, {iv['high']:+.2%}]"


def verdict_table_data(verdicts: Iterable[Verdict]) -> TableData:
    header = [
        "group",
        "rank",
        "profile",
        "seeds",
        "mean ppl",
        "gain vs cosine (95% CI)",
        "gain vs uniform (95% CI)",
        "front-load",
    ]
    rows = []
    for v in verdicts:
        for row in v.table:
            fl = row.get("front_load")
            rows.append(
                [
                    v.group,
                    str(row["rank"]),
                    row["label"],
                    str(row["n_seeds"]),
                    f"{row['mean_ppl']:.3f}",
                    _ci(row.get("gain_vs_cosine")),
                    _ci(row.get("gain_vs_uniform")),
                    "" if fl is None else f"{fl:.3f}",
                ]
            )
    return TableData(header, rows)


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
