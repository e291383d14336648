"""The learning-rate check in the report: its points (plain data, tested), its figure (the gap
between cosine and the candidate at half, base and twice the rate, with every interval) and its
markdown table. Input: the check's `to_dict` (`tlmsearch.analysis.rate_check`), as summary.json
holds it. Importing this module does not import plotly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

# one colour per verdict (budget) of a sweep; the first is the report's colour of the best profile
SERIES_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go


class RatePoint(NamedTuple):
    group: str
    name: str  # "half", "base", "twice"
    rate: float
    n: int  # paired seeds
    estimate: float  # nats: loss(cosine) - loss(candidate), positive: the candidate is better (nan: no pair)
    low: float
    high: float
    decision: str | None


def rate_check_data(checks: Sequence[Mapping[str, Any]]) -> list[RatePoint]:
    """One point per (check, rate), in the order of the checks and of their rates."""
    out = []
    for check in checks:
        for c in check.get("cells") or []:
            gap = c.get("gap_nats") or {}
            out.append(
                RatePoint(
                    group=str(check.get("group", "")),
                    name=str(c["name"]),
                    rate=float(c["rate"]),
                    n=int(c.get("n", 0)),
                    estimate=_num(gap.get("estimate")),
                    low=_num(gap.get("low")),
                    high=_num(gap.get("high")),
                    decision=c.get("decision"),
                )
            )
    return out


def plot_rate_check(checks: Sequence[Mapping[str, Any]]) -> go.Figure:
    """The gap loss(cosine) - loss(candidate) against the learning rate (log axis), one series per
    verdict, each point with its interval; 0 (no difference) dashed."""
    import plotly.graph_objects as go

    fig = go.Figure()
    points = rate_check_data(checks)
    for i, check in enumerate(checks):
        group = str(check.get("group", ""))
        pts = [p for p in points if p.group == group and math.isfinite(p.estimate)]
        fig.add_trace(
            go.Scatter(
                x=[p.rate for p in pts],
                y=[p.estimate for p in pts],
                mode="lines+markers",
                name=f"{group}: {check.get('candidate', '')} vs cosine ({check.get('outcome_text', '')})",
                marker={"color": SERIES_COLORS[i % len(SERIES_COLORS)], "size": 10},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [_half(p.high - p.estimate) for p in pts],
                    "arrayminus": [_half(p.estimate - p.low) for p in pts],
                },
                text=[f"{p.name}: {p.decision or 'undecided'}, {p.n} seeds" for p in pts],
                hovertemplate="rate %{x}<br>gap %{y:+.4f} nats<br>%{text}<extra></extra>",
            )
        )
    fig.add_hline(y=0.0, line_dash="dash", line_color="#888")
    level = checks[0].get("confidence") if checks else None
    fig.update_layout(
        title="Learning-rate check: is the result the same at half and twice the rate?",
        xaxis={"title": "learning rate", "type": "log"},
        yaxis={"title": "loss(cosine) - loss(candidate), nats (> 0: the candidate is better)"},
        height=420,
        legend={"orientation": "h", "y": -0.25},
        annotations=[
            {
                "text": f"bars: two-sided {level:.1%} t intervals over the paired seeds" if level else "",
                "xref": "paper",
                "yref": "paper",
                "x": 0,
                "y": 1.05,
                "showarrow": False,
            }
        ],
    )
    return fig


def rate_check_markdown(check: Mapping[str, Any] | None) -> list[str]:
    """The check of one verdict as markdown: its headline and a table of its rates."""
    if not check:
        return []
    lines = [
        f"### Learning-rate check: {check.get('outcome_text', check.get('outcome'))}",
        "",
        str(check.get("headline", "")),
        "",
        "| rate | | paired seeds | gap loss(cosine) - loss(candidate), nats | gain in perplexity | decision "
        "| mean loss cosine | mean loss candidate | diverged or failed | not trained yet |",
        "|---:|---|---:|---|---|---|---:|---:|---:|---:|",
    ]
    for c in check.get("cells") or []:
        gap, gain = c.get("gap_nats"), c.get("gain")
        lines.append(
            f"| {c['rate']:.6g} | {c['name']} | {c['n']} | {_interval(gap, '+.4f')} | {_interval(gain, '+.2%')} "
            f"| {c.get('decision') or '-'} | {_f(c.get('cosine_loss'))} | {_f(c.get('candidate_loss'))} "
            f"| {c.get('failed', 0)} | {c.get('missing', 0)} |"
        )
    lines += ["", f"Rule: {check.get('rule', '')}.", ""]
    return lines


def _interval(iv: Mapping[str, Any] | None, fmt: str) -> str:
    if not iv:
        return "-"
    low, high = (
        format(x, fmt) if isinstance(x, int | float) and math.isfinite(x) else "n/a" for x in (iv["low"], iv["high"])
    )
    return f"{format(iv['estimate'], fmt)} [{low}, {high}]"


def _f(x: Any) -> str:
    return "-" if not isinstance(x, int | float) or not math.isfinite(x) else f"{x:.4f}"


def _num(x: Any) -> float:
    return float(x) if isinstance(x, int | float) else math.nan


def _half(x: float) -> float:
    return x if math.isfinite(x) else 0.0
