"""The plotly.js a report embeds: the smallest bundle that draws every one of its figures.

plotly's full bundle is 4.8 MB, and a report embeds it once (offline: no network). Every figure
of a run's report draws scatter traces only, which plotly's "basic" partial bundle (scatter,
bar, pie; 1.2 MB) draws too: `plotly-basic.min.js` beside this file is the npm package
`plotly.js-basic-dist-min` at the version the installed plotly embeds (MIT licence:
`plotly-basic.LICENSE`). The full bundle is embedded instead when a figure holds another trace
type, or when the installed plotly embeds another plotly.js version than the copy here (a page
must never pair figures with a plotly.js they were not written for).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

BASIC_JS = Path(__file__).with_name("plotly-basic.min.js")
BASIC_TRACES = frozenset({"scatter", "bar", "pie"})
_VERSION = re.compile(r"plotly\.js \(basic - minified\) v(\d+\.\d+\.\d+)")


def basic_version(head: str) -> str | None:
    """The plotly.js version a basic bundle's opening comment names, or None."""
    found = _VERSION.search(head)
    return found.group(1) if found else None


def fits_basic(trace_types: Iterable[str], basic: str | None, installed: str) -> bool:
    """Whether the basic bundle (of version `basic`, None when absent) can draw figures of
    `trace_types` written by a plotly that embeds plotly.js `installed` (pure)."""
    return basic is not None and basic == installed and set(trace_types) <= BASIC_TRACES


def trace_types(figs: Iterable[Any]) -> set[str]:
    """The trace types of plotly figures ("scatter", "parcoords", ...)."""
    return {str(trace.type) for fig in figs for trace in fig.data}


def plotly_script(figs: Iterable[Any]) -> str:
    """The plotly.js source to embed once in a page that draws `figs`."""
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    try:
        basic = BASIC_JS.read_text(encoding="utf-8")
    except OSError:  # an install without the copy: the full bundle still works offline
        basic = ""
    if fits_basic(trace_types(figs), basic_version(basic[:300]), get_plotlyjs_version()):
        return basic
    return str(get_plotlyjs())
