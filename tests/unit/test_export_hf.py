"""`tlmsearch export --format hf`: a folder that transformers loads (trust_remote_code) into a
model whose logits equal tlmsearch's with the same weights, exactly in float32, for the
Transformer, Gated Attention (both gates), per-layer query/KV heads and per-layer block widths;
that transformers.Trainer trains a step; that generate() continues a prompt as tlmsearch's model
would; and that `--weights` writes a kept checkpoint's trained
weights (from a real tlmsearch training run) so that the loaded model is the trained one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from joint_runs import BOWTIE, joint_model, joint_run

from tlmsearch.cli import main
from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.export.hf import MODELING_FILE, WEIGHTS_FILE
from tlmsearch.export.hf_weights import hf_names
from tlmsearch.export.schedule import export
from tlmsearch.models.build import build_model

transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")

WIDTHS = (96, 64, 32)
MODELS: dict[str, dict[str, Any]] = {
    "transformer": {"arch": "transformer"},
    "gated-elementwise": {"arch": "gated_attention"},
    "gated-headwise": {"arch": "gated_attention", "options": {"gate": "headwise"}},
    "heads": {"arch": "transformer", "attn_heads": (4, 2, 2), "kv_heads": (2, 1, 2)},
    "blocks-untied": {"arch": "gated_attention", "block_widths": (64, 32, 96), "tie_embeddings": False},
}


def _model(**kw: Any) -> ModelConfig:
    return ModelConfig(d_model=64, n_layers=3, n_heads=4, mlp_widths=WIDTHS, seq_len=32, rope_theta=500.0, **kw)


def _folder(cfg: ModelConfig, out: Path, state: dict[str, torch.Tensor] | None = None) -> Path:
    export(cfg, "hf").write(out)
    if state is not None:
        metadata = {"format": "pt"}  # as export writes it (transformers 4 reads it)
        safetensors_torch.save_file(hf_names(state, cfg.tie_embeddings), str(out / WEIGHTS_FILE), metadata=metadata)
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_loaded_folder_gives_tlmsearchs_logits_exactly(name: str, tmp_path: Path) -> None:
    cfg = _model(**MODELS[name])
    ours = build_model(cfg, seed=3).eval()
    folder = _folder(cfg, tmp_path, ours.state_dict())
    doc = json.loads((folder / "config.json").read_text())
    assert doc["intermediate_sizes"] == list(WIDTHS) and doc["rope_theta"] == 500.0
    assert doc["query_heads"] == [cfg.query_heads(i) for i in range(3)]
    assert doc["key_value_heads"] == [cfg.key_value_heads(i) for i in range(3)]
    assert doc["block_widths"] == (list(cfg.block_widths) or None)
    assert (folder / MODELING_FILE).read_text().count("import tlmsearch") == 0  # standalone
    theirs = transformers.AutoModelForCausalLM.from_pretrained(str(folder), trust_remote_code=True).eval()
    assert type(theirs).__name__ == "TlmsearchForCausalLM" and theirs.dtype == torch.float32
    assert (theirs.lm_head.weight is theirs.model.embed.weight) == cfg.tie_embeddings
    n_ours = sum(p.numel() for p in ours.parameters())
    assert sum(p.numel() for p in theirs.parameters()) == n_ours  # the same shapes, nothing extra
    idx = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours_logits, out = ours(idx), theirs(idx, labels=idx)
    assert torch.equal(out.logits, ours_logits)  # max abs difference 0.0, float32
    expected = F.cross_entropy(ours_logits[:, :-1].reshape(-1, cfg.vocab_size), idx[:, 1:].reshape(-1))
    assert torch.equal(out.loss, expected)  # labels shifted inside, as transformers' causal LMs do


def test_untrained_folder_initialises_as_tlmsearch_does(tmp_path: Path) -> None:
    cfg = _model(arch="transformer", block_widths=(64, 32, 96))
    folder = _folder(cfg, tmp_path)
    config = transformers.AutoConfig.from_pretrained(str(folder), trust_remote_code=True)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, trust_remote_code=True)
    blocks = model.model.blocks
    assert torch.equal(blocks[0].attn_norm.weight, torch.ones(64))
    # std 0.02 * sqrt(d / w_l) on block inputs, 0.02 / sqrt(2 L) on residual outputs
    assert blocks[1].mlp.w_up.weight.std().item() == pytest.approx(0.02 * 2**0.5, rel=0.1)
    assert blocks[2].mlp.w_down.weight.std().item() == pytest.approx(0.02 / 6**0.5, rel=0.1)


def test_transformers_trainer_trains_the_folder_a_step(tmp_path: Path) -> None:
    pytest.importorskip("accelerate")
    cfg = _model(arch="gated_attention", attn_heads=(4, 2, 2), kv_heads=(2, 2, 1))
    ours = build_model(cfg, seed=1)
    folder = _folder(cfg, tmp_path / "model", ours.state_dict())
    model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), trust_remote_code=True)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    g = torch.Generator().manual_seed(0)
    rows = [{"input_ids": x, "labels": x} for x in torch.randint(0, cfg.vocab_size, (4, cfg.seq_len), generator=g)]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=1, per_device_train_batch_size=4, learning_rate=1e-2,
        use_cpu=True, report_to=[], save_strategy="no", logging_steps=1, dataloader_num_workers=0,
    )  # fmt: skip
    trainer = transformers.Trainer(model=model, args=args, train_dataset=rows)
    result = trainer.train()
    assert result.global_step == 1 and torch.isfinite(torch.tensor(result.training_loss))
    ids = torch.stack([r["input_ids"] for r in rows])
    with torch.no_grad():  # the loss it trained on is tlmsearch's model's loss on that batch
        logits = ours(ids)
    expected = F.cross_entropy(logits[:, :-1].reshape(-1, cfg.vocab_size), ids[:, 1:].reshape(-1)).item()
    assert result.training_loss == pytest.approx(expected, rel=1e-5)
    after = model.state_dict()
    assert all(not torch.equal(before[k], after[k]) for k in after if k.endswith("w_qkvg.weight"))


def test_generate_continues_greedily_as_tlmsearchs_model(tmp_path: Path) -> None:
    cfg = _model(arch="gated_attention", attn_heads=(4, 2, 2), kv_heads=(2, 2, 1))
    ours = build_model(cfg, seed=5).eval()
    folder = _folder(cfg, tmp_path, ours.state_dict())
    theirs = transformers.AutoModelForCausalLM.from_pretrained(str(folder), trust_remote_code=True).eval()
    prompt = torch.randint(0, cfg.vocab_size, (2, 8), generator=torch.Generator().manual_seed(1))
    out = theirs.generate(prompt, max_new_tokens=cfg.seq_len, do_sample=False)  # past max_position_embeddings
    ids = prompt
    with torch.no_grad():  # greedy with tlmsearch's model: the whole sequence each step
        for _ in range(cfg.seq_len):
            ids = torch.cat([ids, ours(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(out, ids) and len(set(ids[:, 8:].flatten().tolist())) > 1


def _trained_checkpoint(cfg: ModelConfig, where: Path) -> Path:
    """Train `cfg` two steps with tlmsearch's trainer, checkpointing into `where`."""
    from tlmsearch.training.trainer import CHECKPOINT_FILE, train

    steps = TrainConfig(steps=2, eval_interval=2, eval_windows=2, final_eval_windows=2, batch_size=2, warmup_steps=1)
    train(cfg, steps.replace(device="cpu", threads=1), DataConfig(corpus="pydoc"), checkpoint_dir=where)
    return where / CHECKPOINT_FILE


def test_export_with_weights_loads_the_trained_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = joint_run(tmp_path / "run")
    cfg = joint_model(BOWTIE)  # trial t2: per-layer block widths
    ckpt = _trained_checkpoint(cfg, run / "tune" / "trial_t2" / "checkpoint_000002")
    out = tmp_path / "hf"
    assert main(["export", str(run), "--trial", "t2", "--format", "hf", "--weights", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"weights: {WEIGHTS_FILE} from {ckpt} (step 2)" in printed
    assert f"from_pretrained({str(out)!r}, trust_remote_code=True)" in printed
    trained = build_model(cfg)
    trained.load_state_dict(torch.load(ckpt, weights_only=True)["model"])
    theirs = transformers.AutoModelForCausalLM.from_pretrained(str(out), trust_remote_code=True)
    idx = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(theirs(idx).logits, trained.eval()(idx))
        assert not torch.equal(trained(idx), build_model(cfg, seed=0).eval()(idx))
    # another trial's model, or --weights with a format that holds no weights: one line each, exit 2
    capsys.readouterr()
    for argv in (
        ["--trial", "t1", "--format", "hf", "--weights", str(ckpt)],
        ["--trial", "t2", "--format", "native", "--weights", str(ckpt)],
        ["--trial", "t0", "--format", "hf", "--weights"],
    ):
        assert main(["export", str(run), *argv, "--out", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and ("--weights" in err or "kept checkpoint" in err)


@pytest.mark.parametrize("arch", ["titans", "hope_attention"])
def test_families_without_a_hugging_face_model_are_refused_in_one_line(arch: str) -> None:
    from tlmsearch.errors import UserError

    cfg = ModelConfig(arch=arch, d_model=32, n_layers=2, n_heads=2, mlp_widths=(64, 64), seq_len=32)
    with pytest.raises(UserError, match="export it as native"):
        export(cfg, "hf")
