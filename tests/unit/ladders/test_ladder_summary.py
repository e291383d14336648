"""The ladder's summary from per-point results: trends per profile with Holm, the conclusion, the
notes, the report's tables and plot data (no training)."""

from __future__ import annotations

import math

from tlmsearch.ladders.gains import PairedGain, PointResult
from tlmsearch.ladders.points import PointSize
from tlmsearch.ladders.report import plot_data, tables, to_html, to_markdown
from tlmsearch.ladders.summary import paper_point, summarize_ladder
from tlmsearch.ladders.trend import Target

CONFIG = {"name": "lad", "arch": "transformer", "alpha": 0.05, "margin": 0.01}


def _rows(cos_gains, flat_profile=False):
    rows = []
    for i, g in enumerate(cos_gains):
        size = PointSize(non_embedding=10**5 * 10**i, params_total=2 * 10**5 * 10**i, steps=100, tokens=10**6 * 10**i,
                         flops_per_token=6.0 * 10**5 * 10**i)  # fmt: skip
        gains = {
            "cosine": {"uniform": PairedGain(g, 0.001, 6)},
            "uniform": {"cosine": PairedGain(-g, 0.001, 6)},
            "openelm:start=0.5,end=4": {
                "uniform": PairedGain(-0.01, 0.004, 6),
                "cosine": PairedGain(-0.01 - g, 0.004, 6),
            },
        }
        if flat_profile:
            gains["groups:third=late"] = {"uniform": PairedGain(0.0, 0.0, 6), "cosine": PairedGain(-g, 0.001, 6)}
        rows.append((f"p{i}", size, PointResult({"outcome": "better", "headline": "h"}, gains), 20.0 if i else 5.0))
    return rows


def test_a_clear_rise_is_a_trend_and_the_conclusion_states_its_reach():
    s = summarize_ladder(CONFIG, _rows([0.00, 0.01, 0.02, 0.03]), target=Target("440m", 1e20), texts={"p0": "tiny@5"})
    t = s["trends"]["uniform"]["cosine"]
    assert t["shown"] and t["slope_per_decade"]["estimate"] > 0 and t["p_holm"] >= t["p_value"]
    assert "grows with compute" in t["text"]
    assert s["conclusion"].startswith("cosine over uniform: ") and "the target 440m" in s["conclusion"]
    assert "paper reports +12.7 %" in s["conclusion"]
    assert s["points"][0]["point"] == "tiny@5" and s["points"][1]["point"] == "p1"
    assert any("below 20 tokens per parameter (p0)" in n for n in s["notes"])
    assert not s["trends"]["uniform"]["openelm:start=0.5,end=4"]["shown"]  # constant: no trend shown
    assert "no trend shown" in s["trends"]["uniform"]["openelm:start=0.5,end=4"]["text"]


def test_flat_gain_says_no_trend_shown_never_no_trend():
    s = summarize_ladder(CONFIG, _rows([0.01, 0.0101, 0.0099, 0.01]), target=Target("x", 1e20), texts={})
    text = s["trends"]["uniform"]["cosine"]["text"]
    assert "no trend shown" in text and "not evidence of none" in text


def test_three_points_are_descriptive_and_left_out_of_holm():
    s = summarize_ladder(CONFIG, _rows([0.00, 0.01, 0.02]), target=Target("440m", 1e20), texts={})
    t = s["trends"]["uniform"]["cosine"]
    assert not t["shown"] and t["p_value"] < 0.05 and math.isnan(t["p_holm"])
    assert "descriptive only: 3 points" in t["text"] and "Holm" not in t["text"]
    assert "; extrapolated 4.2 decades of compute beyond the data to 440m: " in s["conclusion"]
    assert tables(s)[2][2][0][-1] == "descriptive"


def test_two_points_render_without_an_interval():
    import json

    from tlmsearch.report.run import json_safe

    s = summarize_ladder(CONFIG, _rows([0.00, 0.01]), target=Target("440m", 1e20), texts={})
    t = s["trends"]["uniform"]["cosine"]
    assert "no interval from 2 points" in t["text"] and "descriptive only: 2 points" in t["text"]
    assert "[-inf, +inf]" in s["conclusion"]
    page, md = to_html(s), to_markdown(s)
    assert "<svg" in page and "| cosine |" in md
    back = json.loads(json.dumps(json_safe(s)))
    assert back["trends"]["uniform"]["cosine"]["slope_per_decade"]["low"] is None


def test_a_profile_with_the_references_widths_has_no_trend_and_says_why():
    s = summarize_ladder(CONFIG, _rows([0.0, 0.01, 0.02], flat_profile=True), target=Target("x", 1e20), texts={})
    why = s["trends"]["uniform"]["groups:third=late"]["why"]
    assert "no spread at p0, p1, p2" in why and "same widths" in why


def test_report_renders_tables_plot_and_page():
    s = summarize_ladder(CONFIG, _rows([0.0, 0.01, 0.02]), target=Target("440m", 1e20), texts={})
    titles = [t for t, _, _ in tables(s)]
    assert titles[0] == "Points" and any("Trend of the gain over uniform" in t for t in titles)
    d = plot_data(s)
    assert set(d["series"]) >= {"cosine", "openelm:start=0.5,end=4"} and d["line"]["x"][1] == 20.0
    assert d["paper"] == (math.log10(paper_point()["compute"]), 100 * paper_point()["gain"])
    page = to_html(s)
    assert "<svg" in page and "paper 440M" in page and "nan" not in page.lower()
    assert "| cosine |" in to_markdown(s)
