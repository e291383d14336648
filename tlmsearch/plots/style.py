"""How the report's figures look: one marker per baseline, short names, sizes from content.

Pure functions (no plotly import), so the rules are tested without drawing:

- every baseline gets its own colour *and* symbol (`baseline_style`), cosine the most visible
  one, drawn last (`draw_order`) so no other marker hides it;
- long profile names are shortened for legends (`short_name`), the full name goes to the
  hover text;
- legends sit under the plot, so they never squeeze its width; the figure's height grows
  with the rows of its legend (`layout_for`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

COLORS = {"cosine": "#d62728", "uniform": "#7f7f7f", "best": "#1f77b4", "other": "#9ecae1"}


class MarkerStyle(NamedTuple):
    color: str
    symbol: str
    size: int


# the baselines the field argues about, each with a fixed look (prefix match on the name)
_BASELINES: tuple[tuple[str, MarkerStyle], ...] = (
    ("cosine:start=0.5", MarkerStyle("#9467bd", "triangle-up", 13)),  # expanding cosine
    ("cosine", MarkerStyle(COLORS["cosine"], "star", 17)),
    ("uniform", MarkerStyle(COLORS["uniform"], "square", 12)),
    ("linear", MarkerStyle("#2ca02c", "diamond", 13)),
    ("bowtie", MarkerStyle("#ff7f0e", "hourglass", 13)),
    ("groups:third=early", MarkerStyle("#8c564b", "triangle-left", 13)),
    ("groups:third=middle", MarkerStyle("#8c564b", "x", 13)),
    ("groups:third=late", MarkerStyle("#8c564b", "triangle-right", 13)),
    ("openelm", MarkerStyle("#e377c2", "pentagon", 13)),
    # the other shapes of the literature (`profiles.LITERATURE`)
    ("reverse", MarkerStyle("#a6761d", "triangle-down", 13)),
    ("frame", MarkerStyle("#1b9e77", "square-x", 13)),
    ("crown", MarkerStyle("#e6ab02", "star-triangle-up", 14)),
    ("middle", MarkerStyle("#393b79", "hexagon", 13)),
)
_SPARE = (
    MarkerStyle("#17becf", "circle-open", 12),
    MarkerStyle("#bcbd22", "square-open", 12),
    MarkerStyle("#7f7f7f", "diamond-open", 12),
    MarkerStyle("#1f77b4", "cross", 12),
)


def baseline_style(name: str, index: int = 0) -> MarkerStyle:
    """The marker of baseline `name`; unknown baselines take spare styles by `index`."""
    for prefix, style in _BASELINES:
        if name == prefix or name.startswith(prefix + ":") or name.startswith(prefix):
            return style
    return _SPARE[index % len(_SPARE)]


def draw_order(names: Sequence[str]) -> list[str]:
    """Baseline names in drawing order: cosine last (on top), the rest sorted."""
    return sorted(names, key=lambda n: (n.startswith("cosine") and not n.startswith("cosine:start=0.5"), n))


def short_name(name: str, limit: int = 36) -> str:
    """`name` cut to `limit` characters with an ellipsis in the middle (both ends stay readable)."""
    if len(name) <= limit:
        return name
    keep = limit - 1
    head = (keep + 1) // 2
    return name[:head] + "…" + name[len(name) - (keep - head) :]


def legend_rows(names: Sequence[str], width_px: int = 1000, char_px: float = 7.0, pad_px: int = 50) -> int:
    """How many rows a horizontal legend of `names` takes at `width_px` (a generous estimate)."""
    rows, used = 1, 0.0
    for n in names:
        w = pad_px + char_px * len(n)
        if used and used + w > width_px:
            rows += 1
            used = 0.0
        used += w
    return rows if names else 0


def layout_for(trace_names: Sequence[str], *, plot_px: int = 420, row_px: int = 22) -> dict[str, Any]:
    """Layout settings that keep the plot area at `plot_px` with the legend below it."""
    rows = legend_rows(trace_names)
    legend_px = rows * row_px + 30
    return {
        "height": plot_px + legend_px + 80,
        "margin": {"l": 70, "r": 30, "t": 60, "b": legend_px + 50},
        "legend": {"orientation": "h", "yanchor": "top", "y": -0.12 * 420 / plot_px, "x": 0, "xanchor": "left"},
        "autosize": True,
    }


def table_height(rows: Sequence[Sequence[str]], widths_chars: Sequence[int], *, line_px: int = 20) -> int:
    """Pixel height of a table whose cells wrap at `widths_chars` characters per column."""
    total = 40  # header
    for row in rows:
        lines = max((math.ceil(len(cell) / max(w, 1)) or 1) for cell, w in zip(row, widths_chars, strict=False))
        total += lines * line_px + 8
    return total + 60
