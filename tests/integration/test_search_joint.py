"""`tlmsearch search --space joint` end to end on preset tiny (4 layers, so that a bowtie has a
middle): real short trainings whose records carry the joint architecture (per-layer query heads,
block widths) in `model`, every one at exactly the uniform model's non-embedding parameters."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runs import read_lines

from tlmsearch.cli import main
from tlmsearch.configs.resolve import resolve_model
from tlmsearch.models import count_params
from tlmsearch.profiles import JOINT_POINTS, ProfileSpec

pytestmark = pytest.mark.usefixtures("ray_session")

ATTENTION = "joint:mode=attention,heads_start=1.5,heads_end=0.5"
BOWTIE = "joint:mode=block,ratio=0.3,position=0.5"  # at 4 layers the bottleneck of 0.75 rounds away


@pytest.mark.slow
def test_a_joint_search_trains_and_records_heads_and_block_widths(tmp_path: Path) -> None:
    args = ["search", "--preset", "tiny", "--model", "n_layers=4", "--space", "joint", "--name", "joint"]
    args += ["--runs-dir", str(tmp_path), "--sampler", "random", "--scheduler", "none", "--trials", "5"]
    args += ["--noise-seeds", "0", "--max-concurrent", "2", "--corpus", "pydoc", "--quiet"]
    args += ["--steps", "6", "--warmup-steps", "2", "--eval-interval", "3", "--eval-windows", "4", "--batch-size", "4"]
    args += ["--baseline", ATTENTION, "--baseline", BOWTIE]
    assert main(args) == 0
    records = read_lines(tmp_path / "joint" / "trials.jsonl")
    assert len(records) == 5 and all(r["status"] == "complete" for r in records), records
    uniform = count_params(resolve_model("tiny", "transformer", {"n_layers": 4}, ProfileSpec.parse("uniform"))[2])
    texts = [str(ProfileSpec.from_dict(r["profile"])) for r in records]
    by_profile = dict(zip(texts, records, strict=True))
    assert by_profile[ATTENTION]["model"]["attn_heads"] == [3, 2, 2, 1]
    assert by_profile[BOWTIE]["model"]["block_widths"] == [32, 16, 16, 64]
    for text, r in by_profile.items():
        assert text.startswith("joint:")
        model = resolve_model("tiny", "transformer", {"n_layers": 4}, ProfileSpec.parse(text))[2]
        assert r["model"]["mlp_widths"] == list(model.mlp_widths)  # what was trained is what resolves
        assert r["model"].get("attn_heads", []) == list(model.attn_heads)
        assert r["model"].get("block_widths", []) == list(model.block_widths)
        assert count_params(model).non_embedding == uniform.non_embedding == r["metrics"]["params_non_embedding"]

    # the named joint points are verify controls (the set "joint"): re-trained with seeds, recorded whole
    assert main(["verify", str(tmp_path / "joint"), "--top-k", "1", "--seeds", "2", "--controls", "joint"]) == 0
    verified = read_lines(tmp_path / "joint" / "trials.jsonl")[5:]
    trained = {str(ProfileSpec.from_dict(r["profile"])) for r in verified if r["status"] == "complete"}
    assert set(JOINT_POINTS) <= trained, trained
    tapered = [r for r in verified if str(ProfileSpec.from_dict(r["profile"])) == ATTENTION]
    assert len(tapered) >= 2 and all(r["model"]["attn_heads"] == [3, 2, 2, 1] for r in tapered)
