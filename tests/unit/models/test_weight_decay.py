"""Weight-decay groups: AdamW decays the model's matrices (Linear and Embedding weights) and
nothing else; a module can opt parameters out with `no_weight_decay()`."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import ARCHITECTURE_NAMES, TrainConfig
from tlmsearch.models import build_model
from tlmsearch.models.build import weight_decay_split
from tlmsearch.training.trainer import make_optimizer


def tiny_model(arch: str) -> nn.Module:
    return build_model(preset("tiny").model_config(arch, (96, 32)), seed=0)


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_only_linear_and_embedding_weights_decay(arch: str) -> None:
    model = tiny_model(arch)
    decay, keep = weight_decay_split(model)
    named = dict(model.named_parameters())  # tied LM head / embedding: listed once
    assert sorted(decay + keep) == sorted(named) and not set(decay) & set(keep)
    modules = dict(model.named_modules())
    for name in decay:
        owner, _, leaf = name.rpartition(".")
        assert leaf == "weight" and isinstance(modules[owner], nn.Linear | nn.Embedding), name
    for name in keep:
        owner, _, leaf = name.rpartition(".")
        assert not (leaf == "weight" and isinstance(modules[owner], nn.Linear | nn.Embedding)), name
    assert "embed.weight" in decay and "blocks.0.mlp_norm.weight" not in decay


def test_titans_and_hope_special_parameters_do_not_decay() -> None:
    _, keep = weight_decay_split(tiny_model("titans"))
    for name in ("persistent", "memory.conv.weight", "memory.a1", "memory.a2", "memory.w_gates.bias"):
        assert f"blocks.0.{name}" in keep, name
    _, keep = weight_decay_split(tiny_model("hope_attention"))
    assert "blocks.0.levels.0.lr_raw" in keep


def test_a_module_can_opt_out() -> None:
    class Opted(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(4, 4, bias=False)
            self.scale = nn.Linear(4, 4, bias=True)
            self.scale.no_weight_decay = lambda: {"weight"}  # type: ignore[assignment]

    decay, keep = weight_decay_split(Opted())
    assert decay == ["proj.weight"] and sorted(keep) == ["scale.bias", "scale.weight"]


@pytest.mark.parametrize("arch", ["titans", "hope_attention"])
def test_optimizer_decays_exactly_the_decay_group(arch: str) -> None:
    """With zero gradients one AdamW step moves only decayed tensors, each by lr * wd * p."""
    model = tiny_model(arch)
    cfg = TrainConfig(lr=0.1, weight_decay=0.5)
    opt = make_optimizer(model, cfg, torch.device("cpu"))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    decay, keep = weight_decay_split(model)
    params = dict(model.named_parameters())
    for name in decay:
        torch.testing.assert_close(params[name].detach(), before[name] * (1 - 0.1 * 0.5))
    for name in keep:
        assert torch.equal(params[name].detach(), before[name]), name
