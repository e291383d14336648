"""Plot data, summary and the offline HTML report on synthetic runs with a known answer."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from analysis_fakes import TRUE, record, search_records, verify_records, write_run

from tlmsearch import plots
from tlmsearch.analysis.collect import profile_results
from tlmsearch.analysis.summary import summarize, verdicts
from tlmsearch.errors import UserError
from tlmsearch.report.run import FIGURES, write_report


def test_pareto_data_single_budget_uses_throughput() -> None:
    d = plots.pareto_data(search_records())
    assert d.x_name == "tokens_per_s" and d.x_maximize
    assert {p.trial_id for p in d.points} == {"b0", "b1", "s0", "s1", "s2"}  # the stopped trial is left out
    best = min(d.points, key=lambda p: p.y)
    assert best.on_front
    assert {p.baseline for p in d.points if p.baseline} == {"uniform", "cosine"}


def test_pareto_data_budget_sweep_uses_parameters() -> None:
    from analysis_fakes import BUDGET

    recs = [
        record("a", "uniform", 2.0),
        record("b", "uniform", 1.9, budget=BUDGET.replace(base_width=96)),
        record("c", "cosine", 1.95, budget=BUDGET.replace(base_width=96)),
    ]
    d = plots.pareto_data(recs)
    assert d.x_name == "params_total" and not d.x_maximize
    assert [p.trial_id for p in d.front] == ["a", "b"]


def test_widths_curves_front_load_parallel_data() -> None:
    recs = search_records()
    w = plots.widths_data(recs, k=2)
    roles = [s.role for s in w.series]
    assert roles == ["best", "best", "cosine", "uniform"] and w.layers == [0, 1, 2, 3]
    assert w.series[0].label.endswith("knots:k0=3,k1=1")
    assert all(sum(s.widths) == 256 for s in w.series)

    curves = plots.curves_data(recs)
    assert len(curves) == 6 and {c.status for c in curves} == {"complete", "stopped"}
    assert all(c.steps == sorted(c.steps) for c in curves)

    fl = plots.front_load_data(recs)
    assert len(fl) == 5 and next(p for p in fl if p.baseline == "uniform").front_load == pytest.approx(0.5)

    par = plots.parallel_data(recs)
    assert par.names == ["end", "k0", "k1", "start"] and len(par.color) == 3
    assert math.isnan(par.columns[0][0])  # knots trials have no "end"


def test_widths_data_computes_missing_baselines() -> None:
    recs = [r for r in search_records() if r["kind"] == "sampled"]
    w = plots.widths_data(recs, k=1)
    cos = next(s for s in w.series if s.role == "cosine")
    assert math.isnan(cos.value) and cos.widths[0] > cos.widths[-1]


def test_profile_results_pair_by_seed_and_attach_search_scores() -> None:
    res = profile_results(search_records() + verify_records())
    assert len(res) == len(TRUE)
    assert all(r.n_seeds == 3 for r in res)
    assert all(r.search_score is not None for r in res)


def test_summary_with_clear_winner() -> None:
    s = summarize(search_records() + verify_records(), {"arch": "transformer"})
    (v,) = s["verdicts"]
    assert v["near_optimal"] is False and v["better"] == "knots:k0=3,k1=1"
    assert v["cosine_rank"] == 2 and v["group"] == "transformer"
    assert s["best"][0]["profile"] == "knots:k0=3,k1=1"
    json.dumps(s)  # plain data


def test_summary_with_a_tie_is_near_optimal() -> None:
    (v,) = verdicts(verify_records(winner_gain=0.0))
    assert v.near_optimal


def test_summary_without_verification_says_what_to_do() -> None:
    s = summarize(search_records())
    assert s["verdicts"] == [] and "tlmsearch verify" in s["notes"][0]


def test_figures_return_plotly_figures() -> None:
    go = pytest.importorskip("plotly.graph_objects")
    recs = search_records() + verify_records()
    for fig in (
        plots.plot_pareto(recs),
        plots.plot_widths(recs),
        plots.plot_curves(recs),
        plots.plot_front_load(recs),
        plots.plot_parallel(recs),
        plots.plot_verdict(verdicts(recs)),
    ):
        assert isinstance(fig, go.Figure) and fig.data


def test_report_files_offline(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", search_records() + verify_records())
    paths = write_report(run)
    page = paths["html"].read_text()
    for fig_id in FIGURES:
        assert f'id="fig-{fig_id}"' in page
    assert not re.search(r"<script[^>]+src=[\"']?https?:", page)
    assert "Plotly.newPlot" in page and "a better profile than cosine exists" in page
    assert "a better profile than cosine exists" in paths["markdown"].read_text()
    assert json.loads(paths["json"].read_text())["verdicts"][0]["better"] == "knots:k0=3,k1=1"


def test_report_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        write_report(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="trials.jsonl"):
        write_report(tmp_path / "empty")
    run = write_run(tmp_path / "stopped", [record("x", "uniform", 2.0, status="stopped")])
    with pytest.raises(UserError, match="no finished trials"):
        write_report(run)


def test_study_methods_delegate(tmp_path: Path) -> None:
    import tlmsearch

    study = tlmsearch.load(write_run(tmp_path / "run", search_records() + verify_records()))
    (v,) = study.verdicts()
    assert v.better == "knots:k0=3,k1=1"
    assert study.report()["html"].exists()
    ex = study.export("openelm", out_dir=tmp_path / "o")
    assert ex.exact and (tmp_path / "o" / "config.json").exists()
    assert study.export("widths", trial="s1", out_dir=tmp_path / "w").built == tuple(search_records()[3]["widths"])


def test_profiles_figure_one_line_per_profile() -> None:
    fig = plots.profiles_figure({"cosine:start=1.5,end=0.5": [96, 32], "uniform": [64, 64], "x": [80, 48]}, "t")
    assert [tr.name for tr in fig.data] == ["cosine:start=1.5,end=0.5", "uniform", "x"]
    assert list(fig.data[2].y) == [80, 48] and list(fig.data[2].x) == [0, 1]
    assert fig.data[0].line.dash == "dash" and fig.layout.title.text == "t"


def test_profiles_with_equal_widths_are_one_candidate() -> None:
    """groups:late is uniform on 2 layers (the late third of 2 layers holds no whole layer): one model,
    so one candidate under both names, counted once among the verdict's candidates."""
    from analysis_fakes import BUDGET

    two = BUDGET.replace(n_layers=2)
    recs = [
        record(f"{spec}-{s}", spec, loss + 0.01 * s, kind="compare", seed=s, budget=two)
        for spec, loss in (("groups:late", 2.5), ("uniform", 2.0), ("cosine", 2.1))
        for s in range(2)
    ]
    res = profile_results(recs, kinds=("compare",))
    assert sorted(r.label for r in res) == ["cosine", "uniform"]
    merged = next(r for r in res if r.label == "uniform")
    assert merged.names == ("uniform", "groups:third=late") and merged.name == "uniform = groups:third=late"
    assert merged.loss == {0: 2.0, 1: 2.01}  # a seed trained under both names keeps the baseline's run
    (v,) = verdicts(recs, kinds=("compare",))
    assert v.n_candidates == 1 and [row["name"] for row in v.table][0] == "uniform = groups:third=late"


def test_verdict_uses_the_latest_step_count_only() -> None:
    old = verify_records(winner_gain=0.0)
    for r in old:
        r["max_steps"] = 10
    recs = old + verify_records()  # the latest verify: 40 steps, with a clear winner
    (v,) = verdicts(recs)
    assert v.better == "knots:k0=3,k1=1" and all(row["n_seeds"] == 3 for row in v.table)
    (tie,) = verdicts(verify_records() + old)
    assert tie.near_optimal


def test_search_optimism_of_the_favourite() -> None:
    (v,) = verdicts(search_records(noise=0.0) + verify_records(spread=0.0, noise=0.0))
    # verified records are built from the same true losses: no optimism without noise
    assert v.search_best == "knots:k0=3,k1=1"
    assert v.search_optimism == pytest.approx(0.0, abs=1e-9)


def test_ranking_draws_the_searchs_tie_band_only_with_a_floor() -> None:
    recs = search_records()
    fig = plots.plot_ranking(recs)
    assert "noise floor: not measured" in fig.layout.title.text and not fig.layout.shapes
    floor = {"metric": "val_loss", "n": 3, "planned": 3, "seeds": [1, 2, 3], "sd": 0.02, "tie_gap": 0.0566,
             "steps": 40, "complete": True}  # fmt: skip
    fig = plots.plot_ranking(recs, floor=floor)
    assert "is a tie; band: the ties with the best" in fig.layout.title.text and len(fig.layout.shapes) == 1
    best = min(p.y for p in plots.pareto_data(recs).points)
    assert (fig.layout.shapes[0].y0, fig.layout.shapes[0].y1) == pytest.approx((best, best + 0.0566))
