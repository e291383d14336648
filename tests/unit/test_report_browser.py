"""The report as a person sees it: `report.html` opened in a real headless Chromium.

Checks what a reader needs: plotly renders every figure, every trace of every figure is
drawn, every verdict-table row is on screen and inside the page width, nothing is cut at the
right edge, and the page asks the network for nothing (it must work offline).

Skipped when Playwright or a Chromium binary is missing; `.ci/run` installs Debian's chromium.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from analysis_fakes import search_records, verify_records, write_run

from tlmsearch.report.run import FIGURES, write_report

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# slow: starting Chromium alone takes seconds (the development loop checks the report's HTML without it)
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium)"),
    pytest.mark.slow,
]

ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _long_name_records() -> list[dict]:
    """A run whose sampled profiles have long names (the legend and table must cope)."""
    recs = search_records() + verify_records()
    for r in recs:
        if r["profile"]["family"] == "knots":
            r["profile"]["params"] = {**r["profile"]["params"], **{f"k{i}": 1.0 + i / 7 for i in range(2, 6)}}
    return recs


@pytest.fixture(scope="module")
def page_of(tmp_path_factory: pytest.TempPathFactory):
    run = write_run(tmp_path_factory.mktemp("report") / "run", _long_name_records())
    html = write_report(run)["html"]
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        requests: list[str] = []
        page.on("request", lambda req: requests.append(req.url))
        page.goto(Path(html).as_uri())
        page.wait_for_function("() => window.Plotly !== undefined", timeout=30_000)
        page.wait_for_function(
            f"() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= {len(FIGURES)}", timeout=30_000
        )
        yield page, requests, html
        browser.close()


def test_no_network_request(page_of) -> None:
    _, requests, html = page_of
    outside = [u for u in requests if not u.startswith(("file:", "data:", "about:", "blob:"))]
    assert outside == [], outside
    assert requests and requests[0] == Path(html).as_uri()


def test_every_figure_draws_every_trace(page_of) -> None:
    page, _, _ = page_of
    for fig_id in FIGURES:
        counts = page.evaluate(
            """(id) => {
                const gd = document.getElementById(id);
                const drawn = gd.querySelectorAll('.scatterlayer .trace, .parcoords, .table').length;
                const legend = [...gd.querySelectorAll('.legend .traces')].filter(e => {
                    const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0;
                }).length;
                const shown = gd.data.filter(t => t.showlegend !== false).length;
                return {data: gd.data.length, drawn, legend, shown, plot: gd._fullLayout._size.w};
            }""",
            f"fig-{fig_id}",
        )
        assert counts["data"] > 0, fig_id
        assert counts["drawn"] >= min(counts["data"], 1), (fig_id, counts)
        if counts["shown"] > 1:  # a legend entry for every trace, none hidden by overflow
            assert counts["legend"] == counts["shown"], (fig_id, counts)
        assert counts["plot"] > 600, (fig_id, counts)  # the legend never squeezes the plot


def test_every_verdict_row_visible_and_nothing_cut(page_of) -> None:
    page, _, _ = page_of
    rows = page.locator("#verdict-table tbody tr")
    n = rows.count()
    assert n == 5  # five re-evaluated profiles in the fake run
    width = page.evaluate("() => document.documentElement.clientWidth")
    for i in range(n):
        box = rows.nth(i).bounding_box()
        assert box is not None and box["height"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= width + 1
    assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    headline = page.locator(".headline").first
    hb = headline.bounding_box()
    assert hb is not None and hb["x"] + hb["width"] <= width + 1


def test_summary_is_rendered_markdown(page_of) -> None:
    page, _, _ = page_of
    assert page.locator("#summary table").count() >= 1  # tables, not raw pipes in a <pre>
    assert page.locator("#summary pre").count() == 0
    assert "| rank |" not in page.locator("#summary").inner_text()
