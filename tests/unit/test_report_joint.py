"""The per-layer picture of a joint search: records whose model moves query heads or block widths
show those axes beside the MLP widths (plot data and figure); plain records draw as before."""

from __future__ import annotations

from analysis_fakes import record, search_records

from tlmsearch import plots
from tlmsearch.plots.data import model_axes

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
