"""`tlmsearch export` of a run whose records are joint architectures: the native config carries
the per-layer heads and block widths the trial trained (a joint record's MLP widths hold what its
attention leaves, not the budget's plain total); formats that cannot express an axis refuse in one
line naming it; a record whose joint architecture was edited is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from joint_runs import ATTENTION, BOWTIE, joint_model, joint_run

from tlmsearch.cli import main
from tlmsearch.configs.presets import preset
from tlmsearch.configs.resolve import resolve_model
from tlmsearch.core.base import ModelConfig
from tlmsearch.errors import UserError
from tlmsearch.export.schedule import export_run
from tlmsearch.models import count_params
from tlmsearch.profiles import Budget, ProfileSpec
from tlmsearch.profiles.joint_budget import holds_budget


def test_native_export_of_the_best_joint_architecture_carries_every_axis(tmp_path: Path) -> None:
    run = joint_run(tmp_path / "run")
    ex, path, why = export_run(run, "best", "native", tmp_path / "out")
    assert path is not None
    doc = yaml.safe_load(path.read_text())
    assert doc["meta"]["trial_id"] == "t2" and ex.exact  # the best: the bowtie
    model = ModelConfig.from_dict(doc["model"])
    bowtie = joint_model(BOWTIE)
    assert model.block_widths == (32, 16, 16, 64) and model.mlp_widths == bowtie.mlp_widths
    assert sum(model.mlp_widths) != 4 * 64  # not the budget's plain total: the blocks took their share
    uniform = joint_model("uniform")
    assert count_params(model).non_embedding == count_params(uniform).non_embedding
    assert "lowest search val_loss" in why
    heads, _, _ = export_run(run, "t1", "native", write=False)
    assert yaml.safe_load(heads.text)["model"]["attn_heads"] == [3, 2, 2, 1]


@pytest.mark.parametrize(("trial", "axis"), [("t2", "block (residual-stream) widths"), ("t1", "attention heads")])
@pytest.mark.parametrize("fmt", ["nemotron-nas", "megatron", "openelm", "gemma3n", "widths"])
def test_other_formats_refuse_a_joint_architecture_in_one_line_naming_the_axis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trial: str, axis: str, fmt: str
) -> None:
    run = joint_run(tmp_path)
    assert main(["export", str(run), "--trial", trial, "--format", fmt, "--stdout"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"per-layer {axis}" in err and err.endswith("export it as native")
    uniform = ["export", str(run), "--trial", "t0", "--format", fmt, "--stdout", "--allow-inexact"]
    assert main(uniform) == 0  # the uniform model still exports (nemotron-nas rounds tiny's widths up to 256)


def test_an_edited_joint_record_is_refused(tmp_path: Path) -> None:
    run = joint_run(tmp_path)
    lines = (run / "trials.jsonl").read_text().splitlines()
    record = json.loads(lines[2])
    widths = list(record["widths"])
    widths[0] += 8  # one more MLP step in the first block: more parameters than the budget holds
    record["widths"], record["model"]["mlp_widths"] = widths, widths
    lines[2] = json.dumps(record)
    (run / "trials.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"joint architecture .* does not hold the non-embedding parameters"):
        export_run(run, "t2", "native", write=False)


def test_holds_budget_checks_the_held_quantity_and_the_grid() -> None:
    p = preset("cpu-xs")  # 6 layers of d 64: a bowtie held in parameters drifts in FLOPs there
    budget = p.budget()

    def model(text: str) -> ModelConfig:
        return resolve_model("cpu-xs", "transformer", {}, ProfileSpec.parse(text))[2]

    bowtie = model("joint:block,ratio=0.3,position=0.75")
    flops = model("joint:block,ratio=0.3,position=0.75,hold=flops")
    assert holds_budget(bowtie, budget) and not holds_budget(bowtie, budget, "flops")
    assert holds_budget(flops, budget, "flops") and not holds_budget(flops, budget)
    assert not holds_budget(bowtie.replace(mlp_widths=tuple(w + 1 for w in bowtie.mlp_widths)), budget)  # off the grid
    assert holds_budget(joint_model(ATTENTION), Budget(4, 64, multiple_of=8))
