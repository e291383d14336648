"""The per-layer picture of a joint search: records whose model moves query heads, key/value heads
or block widths show those axes beside the MLP widths (plot data and figure, the verification's
table, the run report, the study's shape tables); plain records draw as before."""

from __future__ import annotations

from pathlib import Path

from analysis_fakes import record, search_records
from joint_runs import ATTENTION, BOWTIE, LOSSES, joint_model, joint_verified

from tlmsearch import plots
from tlmsearch.analysis.collect import profile_results
from tlmsearch.analysis.crossarch import cross_table
from tlmsearch.analysis.verdicts import verdicts
from tlmsearch.ladders.gains import point_result
from tlmsearch.ladders.report import tables as ladder_tables
from tlmsearch.plots.data import model_axes
from tlmsearch.report.run import build, render_markdown
from tlmsearch.rundir.records import read_records
from tlmsearch.studies.report import _shape_svgs, shape_text

MODEL = {"arch": "transformer", "d_model": 32, "n_layers": 4, "n_heads": 2, "seq_len": 32}


def _joint_records() -> list[dict]:
    heads = record("h", "joint:attention,heads_start=1.5,heads_end=0.5", 1.0)  # uniform MLP shape
    heads["model"] = {**MODEL, "mlp_widths": heads["widths"], "attn_heads": [3, 2, 2, 1]}
    block = record("w", "joint:mode=attention,heads_start=1.4,heads_end=0.6", 1.1)  # same MLP widths
    block["profile"] = {"family": "joint", "params": {"mode": "block", "ratio": 0.3, "position": 0.5}}
    block["model"] = {**MODEL, "mlp_widths": block["widths"], "block_widths": [32, 16, 16, 64]}
    return [heads, block, record("c", "cosine", 1.2, kind="baseline", baseline="cosine")]


def test_model_axes_reads_heads_and_block_widths() -> None:
    assert model_axes({**MODEL, "attn_heads": [3, 2, 2, 1]}) == ((3, 2, 2, 1), ())
    assert model_axes({**MODEL, "block_widths": [32, 16, 16, 64]}) == ((2, 1, 1, 4), (32, 16, 16, 64))
    assert model_axes(MODEL) == ((), ()) and model_axes(None) == ((), ())


def test_joint_architectures_with_one_mlp_shape_stay_apart_and_show_their_axes() -> None:
    d = plots.widths_data(_joint_records(), k=3)
    best = [s for s in d.series if s.role == "best"]
    assert [s.heads for s in best] == [(3, 2, 2, 1), (2, 1, 1, 4)]
    assert [s.blocks for s in best] == [(), (32, 16, 16, 64)]
    fig = plots.plot_widths(_joint_records())
    extra = [t for t in fig.data if t.yaxis == "y2"]
    assert len(extra) == 2 and list(extra[0].y) == [3, 2, 2, 1]
    assert any(list(t.y) == [32, 16, 16, 64] for t in fig.data)
    assert "query heads" in fig.layout.title.text


def test_plain_records_draw_as_before() -> None:
    fig = plots.plot_widths(search_records())
    assert all(t.yaxis in (None, "y") for t in fig.data) and "query heads" not in fig.layout.title.text


def test_grouped_kv_heads_are_drawn_beside_the_query_heads() -> None:
    records = _joint_records()
    records[0]["model"]["kv_heads"] = [1, 2, 1, 1]  # grouped-query in some layers
    d = plots.widths_data(records, k=3)
    assert [s.kv for s in d.series if s.role == "best"] == [(1, 2, 1, 1), ()]
    fig = plots.plot_widths(records)
    assert [list(t.y) for t in fig.data if "KV heads" in (t.name or "")] == [[1, 2, 1, 1]]
    assert "KV heads dashed" in fig.layout.title.text


def test_a_verified_head_taper_keeps_its_own_search_score_and_shows_every_axis(tmp_path: Path) -> None:
    """The head taper trains uniform's MLP widths: its search score is its own (2.9), not the mean
    of uniform's and its own, and the verification's table carries its heads and block widths."""
    run = joint_verified(tmp_path / "j")
    results = {r.label: r for r in profile_results(read_records(run))}
    taper, uniform = results[ATTENTION], results["uniform"]
    assert taper.widths == uniform.widths  # the case: one MLP shape, two models
    assert (taper.search_score, uniform.search_score) == (LOSSES[1], LOSSES[0])
    assert taper.axes == {"attn_heads": [3, 2, 2, 1], "kv_heads": [3, 2, 2, 1], "block_widths": [32] * 4}
    assert uniform.axes == {} and results[BOWTIE].axes["block_widths"] == [32, 16, 16, 64]
    (verdict,) = verdicts(read_records(run))
    rows = {row["label"]: row for row in verdict.to_dict()["table"]}
    assert rows[ATTENTION]["attn_heads"] == [3, 2, 2, 1] and "attn_heads" not in rows["uniform"]

    # the study's tables: every axis of a joint profile, the MLP widths alone of a plain one
    (row,) = [r for r in cross_table({"transformer": verdict.to_dict()}) if r["label"] == BOWTIE]
    cell = row["cells"]["transformer"]
    mlp = ",".join(str(w) for w in joint_model(BOWTIE).mlp_widths)
    assert shape_text(cell) == f"mlp {mlp}; query heads 2,1,1,4; kv heads as query; block 32,16,16,64"
    assert shape_text({"widths": [64, 64]}) == "64 64" and shape_text(None) == "—"
    assert _shape_svgs(cell).count("<svg") == 4 and _shape_svgs({"widths": [64, 64]}).count("<svg") == 1


def test_the_run_report_lists_each_joint_architectures_axes(tmp_path: Path) -> None:
    run = joint_verified(tmp_path / "j")
    md = render_markdown(build(run)[0])
    per_layer = [line for line in md.splitlines() if line.startswith("- `joint:")]
    assert len(per_layer) == 2 and any("query heads 3,2,2,1; kv heads as query" in line for line in per_layer)
    assert "block 32,16,16,64 |" in md  # the best trials' table: the bowtie's every axis


def test_a_ladder_point_lists_its_joint_architectures_every_axis(tmp_path: Path) -> None:
    result = point_result(read_records(joint_verified(tmp_path / "j")), None, margin=0.01, alpha=0.05, arch="x")
    assert set(result.shapes) == {ATTENTION, BOWTIE}  # cosine and uniform move no other axis
    assert result.shapes[ATTENTION] == "mlp 64,64,64,64; query heads 3,2,2,1; kv heads as query; block 32,32,32,32"
    point = {"point": "tiny@5", "non_embedding": 1, "tokens_per_param": 5, "compute": 1.0, "lr": None,
             "outcome": None, "note": "-", "gains": {}, "shapes": result.shapes}  # fmt: skip

    def joint_tables(p: dict) -> list:
        summary = {"points": [p], "alpha": 0.05, "trends": {}, "target": {"name": "340m"}}
        return [t for t in ladder_tables(summary) if t[0].startswith("Joint")]

    ((_, header, rows),) = joint_tables(point)
    assert header == ["profile", "tiny@5"] and [r[0] for r in rows] == sorted((ATTENTION, BOWTIE))
    assert joint_tables({**point, "shapes": {}}) == []  # plain profiles: no such table
