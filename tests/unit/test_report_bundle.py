"""report.html embeds plotly.js once, the smallest bundle that draws its figures
(`tlmsearch.plots.bundle`): a run's report stays under 1.5 MB and fully offline."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from analysis_fakes import search_records, verify_records, write_run

from tlmsearch.plots.bundle import BASIC_JS, basic_version, fits_basic, plotly_script
from tlmsearch.plots.figures import scale_axis
from tlmsearch.report.run import FIGURES, write_report

go = pytest.importorskip("plotly.graph_objects")
MAX_BYTES = 1_500_000


def test_fits_basic_needs_basic_traces_and_the_same_version() -> None:
    assert fits_basic(["scatter", "bar"], "4.1.1", "4.1.1")
    assert not fits_basic(["scatter", "parcoords"], "4.1.1", "4.1.1")
    assert not fits_basic(["scatter"], "4.1.0", "4.1.1")  # figures written for another plotly.js
    assert not fits_basic(["scatter"], None, "4.1.1")  # no copy installed
    assert basic_version("/**\n* plotly.js (basic - minified) v4.1.1\n*/") == "4.1.1"
    assert basic_version("/**\n* plotly.js v4.1.1\n*/") is None  # the full bundle is not the basic one


def test_the_shipped_basic_bundle_matches_the_installed_plotly() -> None:
    from plotly.offline import get_plotlyjs_version

    assert basic_version(BASIC_JS.read_text()[:300]) == get_plotlyjs_version()


def test_a_figure_the_basic_bundle_cannot_draw_gets_the_full_one() -> None:
    from plotly.offline import get_plotlyjs

    scatter = go.Figure(go.Scatter(x=[1], y=[2]))
    assert plotly_script([scatter]) == BASIC_JS.read_text()
    table = go.Figure(go.Table(header={"values": ["a"]}, cells={"values": [["1"]]}))
    assert plotly_script([scatter, table]) == get_plotlyjs()


def test_scale_axis() -> None:
    scaled, lo, hi = scale_axis([2.0, 4.0, math.nan, 3.0])
    assert scaled == [0.0, 1.0, None, 0.5] and (lo, hi) == (2.0, 4.0)
    assert scale_axis([1.0, 1.0])[0] == [0.5, 0.5]
    scaled, lo, hi = scale_axis([math.nan])
    assert scaled == [None] and math.isnan(lo) and math.isnan(hi)


def test_report_is_small_with_plotly_once_and_offline(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", search_records() + verify_records())
    page = write_report(run)["html"]
    text = page.read_text()
    assert page.stat().st_size <= MAX_BYTES, page.stat().st_size
    assert len(re.findall(r"\* plotly\.js .*v\d+\.\d+\.\d+", text)) == 1  # one copy of plotly.js
    assert text.count("Plotly.newPlot") == len(FIGURES)  # every figure drawn by that copy
    assert not re.search(r"<script[^>]+src=", text)  # nothing fetched
