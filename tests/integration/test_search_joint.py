"""`tlmsearch search --space joint` end to end on preset tiny (4 layers, so that a bowtie has a
middle): real short trainings whose records carry the joint architecture (per-layer query heads,
block widths) in `model`, every one at exactly the uniform model's non-embedding parameters."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runs import read_lines

from tlmsearch.analysis.collect import profile_results
from tlmsearch.cli import main
from tlmsearch.configs.identity import shape_key
from tlmsearch.configs.resolve import resolve_model
from tlmsearch.models import count_params
from tlmsearch.profiles import JOINT_POINTS, ProfileSpec
from tlmsearch.rundir.records import read_records

pytestmark = pytest.mark.usefixtures("ray_session")

ATTENTION = "joint:mode=attention,heads_start=1.5,heads_end=0.5"
BOWTIE = "joint:mode=block,ratio=0.3,position=0.5"  # at 4 layers the bottleneck of 0.75 rounds away


@pytest.mark.slow
def test_a_joint_search_trains_and_records_heads_and_block_widths(tmp_path: Path) -> None:
    args = ["search", "--preset", "tiny", "--model", "n_layers=4", "--space", "joint", "--name", "joint"]
    args += ["--runs-dir", str(tmp_path), "--sampler", "random", "--scheduler", "none", "--trials", "5"]
    args += ["--noise-seeds", "0", "--max-concurrent", "1", "--corpus", "pydoc", "--quiet"]
    args += ["--steps", "6", "--warmup-steps", "2", "--eval-interval", "3", "--eval-windows", "4", "--batch-size", "4"]
    args += ["--baseline", "uniform", "--baseline", ATTENTION, "--baseline", BOWTIE]  # uniform: the taper's MLP shape
    assert main(args) == 0
    records = read_lines(tmp_path / "joint" / "trials.jsonl")
    assert len(records) == 5 and all(r["status"] == "complete" for r in records), records
    uniform = count_params(resolve_model("tiny", "transformer", {"n_layers": 4}, ProfileSpec.parse("uniform"))[2])
    texts = [str(ProfileSpec.from_dict(r["profile"])) for r in records]
    by_profile = dict(zip(texts, records, strict=True))
    assert by_profile[ATTENTION]["model"]["attn_heads"] == [3, 2, 2, 1]
    assert by_profile[BOWTIE]["model"]["block_widths"] == [32, 16, 16, 64]
    for text, r in by_profile.items():
        assert text.startswith("joint:") or text == "uniform"
        model = resolve_model("tiny", "transformer", {"n_layers": 4}, ProfileSpec.parse(text))[2]
        assert r["model"]["mlp_widths"] == list(model.mlp_widths)  # what was trained is what resolves
        assert r["model"].get("attn_heads", []) == list(model.attn_heads)
        assert r["model"].get("block_widths", []) == list(model.block_widths)
        assert count_params(model).non_embedding == uniform.non_embedding == r["metrics"]["params_non_embedding"]

    # the named joint points are verify controls (the set "joint"): re-trained with seeds, recorded
    # whole. `joint:mode=mlp,...` names cosine and uniform (one model at every depth: merged, no
    # refusal); at 4 layers the whole-block bowtie is the MLP bowtie control, refused untold
    verify = ["verify", str(tmp_path / "joint"), "--top-k", "1", "--seeds", "2", "--controls", "joint"]
    assert main(verify) == 2
    assert main([*verify, "--allow-collapsed"]) == 0
    verified = read_lines(tmp_path / "joint" / "trials.jsonl")[5:]
    trained = {shape_key(r["model"]) for r in verified if r["status"] == "complete"}
    built = (resolve_model("tiny", "transformer", {"n_layers": 4}, ProfileSpec.parse(t))[2] for t in JOINT_POINTS)
    joint = {shape_key(model) for model in built}
    assert len(joint) == 4 and joint <= trained, trained
    tapered = [r for r in verified if str(ProfileSpec.from_dict(r["profile"])) == ATTENTION]
    assert len(tapered) >= 2 and all(r["model"]["attn_heads"] == [3, 2, 2, 1] for r in tapered)

    # the verification's table keeps the head taper apart from uniform (one MLP shape, two models):
    # its own search score, and the report lists its every axis
    results = {r.label: r for r in profile_results(read_records(tmp_path / "joint"))}
    assert results[ATTENTION].search_score == by_profile[ATTENTION]["metrics"]["val_loss"]
    assert results["uniform"].search_score == by_profile["uniform"]["metrics"]["val_loss"]
    assert results[ATTENTION].axes["attn_heads"] == [3, 2, 2, 1] and results["uniform"].axes == {}
    assert main(["report", str(tmp_path / "joint")]) == 0
    md = (tmp_path / "joint" / "summary.md").read_text()
    assert f"- `{ATTENTION}`: mlp 64,64,64,64; query heads 3,2,2,1; kv heads as query; block 32,32,32,32" in md


@pytest.mark.slow
def test_a_titans_joint_search_draws_only_what_titans_builds(tmp_path: Path) -> None:
    """Titans builds one residual width in every layer: told its family, the joint space draws MLP
    tapers and head tapers only, so every trial trains (a whole-block draw would fail its trial)."""
    args = ["search", "--preset", "tiny", "--model", "n_layers=4", "--arch", "titans", "--space", "joint"]
    args += ["--name", "jt", "--runs-dir", str(tmp_path), "--sampler", "random", "--scheduler", "none"]
    args += ["--trials", "4", "--baseline", "uniform", "--noise-seeds", "0", "--max-concurrent", "1"]
    args += ["--corpus", "pydoc", "--quiet", "--steps", "4", "--eval-interval", "4", "--eval-windows", "2"]
    args += ["--batch-size", "2", "--warmup-steps", "1"]
    assert main(args) == 0
    records = read_lines(tmp_path / "jt" / "trials.jsonl")
    assert len(records) == 4 and all(r["status"] == "complete" for r in records), records
    modes = {ProfileSpec.from_dict(r["profile"]).resolved().params["mode"] for r in records if r["kind"] == "sampled"}
    assert "block" not in modes and "attention" in modes, modes  # random draws: a third would be blocks untold
    assert any(r["model"].get("attn_heads") for r in records)  # heads did move
    journal = (tmp_path / "jt" / "optuna.log").read_text()  # what the sampler was offered: two modes only
    assert '\\"choices\\": [\\"mlp\\", \\"attention\\"]' in journal and '\\"block\\"' not in journal
