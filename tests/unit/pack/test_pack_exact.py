"""Packed training equals training alone: for every family, in float64 on CPU, a member of a
pack (widths that differ across members, seeds too) ends 20 steps with the logits and the
evaluation curve of the same trial trained by `trainer.train`; padded units stay exactly
zero and receive no gradient."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.data import gather, prepare, val_windows
from tlmsearch.models import build_model
from tlmsearch.training.pack import Member, Pack
from tlmsearch.training.pack.optim import clip_per_member
from tlmsearch.training.trainer import CHECKPOINT_FILE, train

FAMILIES = ("transformer", "gated_attention", "hope_attention", "titans")
PYDOC = DataConfig(corpus="pydoc")
# (widths, seed) of each member: the widths differ at every layer, one seed repeats
PLAN = (((96, 32), 0), ((64, 64), 1), ((32, 96), 0))
TOL = 1e-10


def quick(**kw: object) -> TrainConfig:
    base: dict[str, object] = dict(steps=20, batch_size=4, eval_interval=10, eval_windows=4, warmup_steps=5, threads=1)
    base.update(kw)
    return TrainConfig(**base)  # type: ignore[arg-type]


def members(arch: str, train_cfg: TrainConfig) -> list[Member]:
    shape = preset("tiny")
    return [
        Member(model=shape.model_config(arch, widths), train=train_cfg.__class__(**{**train_cfg.to_dict(), "seed": s}))
        for widths, s in PLAN
    ]


def probe(model_cfg: ModelConfig) -> torch.Tensor:
    """Eight validation windows' inputs (8, T), the tokens the logits are compared on."""
    data = prepare(PYDOC)
    starts = val_windows(data.val.shape[0], model_cfg.seq_len, 8)
    return torch.from_numpy(gather(data.val, starts, model_cfg.seq_len))[:, :-1]


def alone(member: Member, folder: Path) -> tuple[torch.nn.Module, list[dict[str, float]]]:
    """The member trained by the trainer alone: its final model (from its last checkpoint) and curve."""
    result = train(member.model, member.train, PYDOC, checkpoint_dir=folder)
    state = torch.load(folder / CHECKPOINT_FILE, weights_only=True)
    model = build_model(result.model_config, seed=0)
    model.load_state_dict(state["model"])
    return model, result.curve


def assert_padding_zero(pack: Pack) -> None:
    assert pack.masks, "these members' widths differ: some units must be padded"
    for name, mask in pack.masks.items():
        assert torch.equal(pack.params[name] * (1 - mask), torch.zeros_like(mask)), name
    _, grads = pack.gradients(pack.step)  # the raw gradients, before the engine masks them
    for name, mask in pack.masks.items():
        assert torch.equal(grads[name] * (1 - mask), torch.zeros_like(mask)), name
        assert grads[name].abs().sum() > 0  # the members' own units do learn


@pytest.mark.parametrize("arch", FAMILIES)
@pytest.mark.slow
def test_member_equals_the_trial_alone(arch: str, tmp_path: Path) -> None:
    group = members(arch, quick())
    pack = Pack(group, PYDOC)
    outcomes = pack.run()
    x = probe(group[0].model)
    for i, (member, outcome) in enumerate(zip(group, outcomes, strict=True)):
        assert outcome.result is not None and outcome.diverged is None
        solo_model, solo_curve = alone(member, tmp_path / f"m{i}")
        packed = pack.member_model(i)
        solo_model.eval(), packed.eval()
        with torch.no_grad():
            diff = (packed(x) - solo_model(x)).abs().max().item()
        assert diff < TOL, (arch, i, diff)
        assert outcome.result.model_config == solo_model.cfg  # type: ignore[union-attr]
        assert len(outcome.result.curve) == len(solo_curve) == 2
        for a, b in zip(outcome.result.curve, solo_curve, strict=True):
            for key in ("step", "tokens", "val_loss", "val_bpb", "train_loss", "lr", "tokens_per_param"):
                assert abs(a[key] - b[key]) < TOL * max(1.0, abs(b[key])), (arch, i, key, a[key], b[key])
            assert ("inner_clip_frac" in a) == ("inner_clip_frac" in b)
    assert_padding_zero(pack)


@pytest.mark.slow
def test_width_parametrization_ema_and_accumulation(tmp_path: Path) -> None:
    """Per-member lr multipliers (width parametrisation), the moving average, gradient
    accumulation and a clipping that binds follow the trainer too."""
    group = members("transformer", quick(parametrization="width", ema_decay=0.9, grad_accum=2, grad_clip=0.5))
    pack = Pack(group, PYDOC)
    _, grads = pack.gradients(0)
    norms = clip_per_member(list(grads.values()), 0.5)  # each member's own norm, as its first step clips it
    assert (norms > 0.5).all() and len(set(norms.tolist())) == len(group)  # clipping binds, per member
    outcomes = pack.run()
    assert pack.optimizer.lr_scale  # the members' down-projections have multipliers other than 1
    x = probe(group[0].model)
    for i, (member, outcome) in enumerate(zip(group, outcomes, strict=True)):
        assert outcome.result is not None
        solo_model, solo_curve = alone(member, tmp_path / f"m{i}")
        with torch.no_grad():
            diff = (pack.member_model(i).eval()(x) - solo_model.eval()(x)).abs().max().item()
        assert diff < TOL, (i, diff)
        for a, b in zip(outcome.result.curve, solo_curve, strict=True):
            for key in ("val_loss", "val_loss_last", "train_loss"):
                assert abs(a[key] - b[key]) < TOL, (i, key)
    assert_padding_zero(pack)
