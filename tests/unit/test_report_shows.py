"""Plots that show what they name, and a report page that says each thing once: stopped
trials' curves as markers, no one-line parallel plot, a Pareto front only where both axes vary,
the header counting every run, the verdict's headline once, headers that wrap between words."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from analysis_fakes import BUDGET, record, search_records, verify_records, write_run

from tlmsearch import plots
from tlmsearch.report.run import figures, quality_figure, runs_line, write_report


def _asha_stopped() -> dict:
    """A trial ASHA stopped at its first rung: one evaluation (step 10 of 20)."""
    return record("s8", "knots:k0=2,k1=1", 2.5, status="stopped", params={"k0": 2.0, "k1": 1.0}, max_steps=20)


def test_a_trial_stopped_at_its_first_evaluation_is_drawn_as_a_marker() -> None:
    recs = [*search_records(), _asha_stopped()]
    curves = {c.trial_id: c for c in plots.curves_data(recs)}
    assert curves["s8"].steps == [10.0] and curves["s8"].mode == "markers"
    assert curves["s9"].steps == [10.0, 20.0] and curves["s9"].mode == "lines+markers"  # stopped at step 20 of 40
    assert curves["b0"].steps == [10.0, 20.0, 30.0, 40.0] and curves["b0"].mode == "lines"
    pytest.importorskip("plotly")
    traces = {t.name.split(" ")[0]: t for t in plots.plot_curves(recs).data}
    assert traces["s8"].mode == "markers" and list(traces["s8"].y) == [3.0]  # 2.5 + 2 (1 - 10/20)^2: its one loss shows
    assert "markers" in traces["s9"].mode and traces["b0"].mode == "lines"


def test_the_parallel_plot_needs_two_trials_that_differ() -> None:
    one = [r for r in search_records() if r["trial_id"] in ("b0", "b1", "s0")]  # one finished sampled trial
    assert not plots.parallel_data(one).informative
    same = [*one, {**one[-1], "trial_id": "s5"}]  # two trials, the same parameters
    assert len(plots.parallel_data(same).color) == 2 and not plots.parallel_data(same).informative
    assert plots.parallel_data(search_records()).informative  # three knots/linear trials, params differ
    pytest.importorskip("plotly")
    assert "parallel" not in figures(one, [], ("baseline", "sampled"))
    assert "parallel" in figures(search_records(), [], ("baseline", "sampled"))


def test_a_pareto_front_where_both_axes_vary_else_a_ranking() -> None:
    sweep = [
        record("a", "uniform", 2.0),
        record("b", "uniform", 1.9, budget=BUDGET.replace(base_width=96)),
        record("c", "cosine", 1.95, budget=BUDGET.replace(base_width=96)),
        record("d", "cosine", 2.1, budget=BUDGET.replace(base_width=128)),
    ]
    d = plots.pareto_data(sweep, x="params_total")
    assert d.two_dimensional and [p.trial_id for p in d.front] == ["a", "b"]  # d: more parameters, worse
    # parameters declared as the second objective at one budget: every trial has the same count
    flat = plots.pareto_data(search_records(), x="params_total")
    assert len({p.x for p in flat.points}) == 1 and not flat.two_dimensional
    pytest.importorskip("plotly")
    kinds = ("baseline", "sampled")
    front = quality_figure(sweep, kinds, ("val_loss",))
    assert front.layout.title.text.startswith("Pareto front: val_loss vs params_total")
    line = next(t for t in front.data if t.name == "Pareto front")
    assert list(line.x) == [p.x for p in d.front]
    assert [round(y, 6) for y in line.y] == [round(p.y, 6) for p in d.front]
    ranking = quality_figure(search_records(), kinds, ("val_loss", "params"))
    assert ranking.layout.title.text.startswith("Finished trials ranked by val_loss")


def test_the_header_counts_every_run() -> None:
    recs = search_records() + verify_records()  # 6 search trials (1 stopped), 15 verification runs
    from tlmsearch.analysis.summary import summarize

    line = runs_line(summarize(recs, {"arch": "transformer"}))
    assert line == (
        "21 runs: 6 search trials (5 ran to the end, 1 stopped early), 15 verification runs (all ran to the end)"
    )


def test_the_page_says_the_verdict_once_and_counts_its_runs(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    run = write_run(tmp_path / "run", search_records() + verify_records())
    paths = write_report(run)
    page = paths["html"].read_text()
    md = paths["markdown"].read_text()
    headline = re.search(r"\*\*(.+?)\*\*", md.split("## Verdict", 1)[1])
    assert headline is not None
    assert page.count(html.escape(headline[1])) == 1 and md.count(headline[1]) == 1
    assert "21 runs: 6 search trials" in page and "finished trials</p>" not in page
    css = re.search(r"<style>(.*?)</style>", page, re.S)
    assert css is not None and re.search(r"th\{[^}]*word-break:normal", css[1])
    assert re.search(r"th\{[^}]*overflow-wrap:normal", css[1])  # the body's anywhere stops at headers
