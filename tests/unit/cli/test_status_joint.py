"""`status` of a run whose records are joint architectures: per-layer query heads, key/value heads
and block widths beside the MLP widths (text and --json); plain records show no such line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from joint_runs import ATTENTION, BOWTIE, joint_model, joint_run

from tlmsearch.cli import main
from tlmsearch.rundir.axes import axes_text, layer_axes
from tlmsearch.rundir.study import load


def test_status_shows_every_axis_of_a_joint_architecture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = joint_run(tmp_path)
    heads, bowtie = joint_model(ATTENTION), joint_model(BOWTIE)
    assert heads.attn_heads == (3, 2, 2, 1) and bowtie.block_widths == (32, 16, 16, 64)  # tiny: d 32, D 16
    assert main(["status", str(run), "--json"]) == 0
    rows = {r["profile"]: r for r in json.loads(capsys.readouterr().out)["best"]}
    row = rows[ATTENTION]
    assert row["attn_heads"] == [3, 2, 2, 1] and row["kv_heads"] == [3, 2, 2, 1] and row["block_widths"] == [32] * 4
    assert row["widths"] == list(heads.mlp_widths)
    row = rows[BOWTIE]  # a block's heads follow its width (w / D)
    assert row["block_widths"] == [32, 16, 16, 64] and row["attn_heads"] == [2, 1, 1, 4] == row["kv_heads"]
    assert row["widths"] == list(bowtie.mlp_widths)
    assert rows["uniform"]["attn_heads"] is None and rows["uniform"]["block_widths"] is None

    assert main(["status", str(run)]) == 0
    lines = capsys.readouterr().out.splitlines()
    mlp = ",".join(str(w) for w in bowtie.mlp_widths)
    shown = [line.strip() for line in lines if "per layer:" in line]
    assert f"per layer: mlp {mlp} | query heads 2,1,1,4 | kv heads as query | block 32,16,16,64" in shown
    assert any("query heads 3,2,2,1 | kv heads as query | block 32,32,32,32" in line for line in shown)
    # one line under each joint row (twice each: best and baselines), none under uniform
    assert len(shown) == 4
    after_uniform = [b for a, b in zip(lines, lines[1:], strict=False) if a.endswith("  uniform")]
    assert after_uniform and not any("per layer" in b for b in after_uniform)


def test_status_writes_kv_heads_out_when_they_differ(tmp_path: Path) -> None:
    record = load(joint_run(tmp_path)).records[1]
    model = record.model_config
    assert model is not None
    grouped = record.replace(model=model.replace(kv_heads=(1, 2, 1, 1)).to_dict())
    row = {"widths": list(record.widths), **layer_axes(grouped)}
    assert row["kv_heads"] == [1, 2, 1, 1]
    assert "| query heads 3,2,2,1 | kv heads 1,2,1,1 |" in (axes_text(row) or "")
