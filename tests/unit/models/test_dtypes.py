"""Whole models in bfloat16 and float64 (`model.to(dtype)`, not autocast): forward and backward
run, gradients keep the model's dtype, and float64 is float64-accurate end to end.

float64 accuracy is checked as a directional derivative: the central difference of the loss
along a random direction in weight space, with step 1e-6, matches the autograd derivative to
1e-6 relative. Any stage that rounds to float32 (a norm or a gate computed in float32, as
before) adds noise of about 1e-7 |loss| / 1e-6 to the difference and fails the check by orders
of magnitude; `test_float32_rounding_fails_the_check` shows it does.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from arch_options import small_chunks

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import ARCHITECTURE_NAMES, ModelConfig
from tlmsearch.models import build_model


def tiny(arch: str) -> ModelConfig:
    return preset("tiny").model_config(arch, (96, 32), options=small_chunks(arch))  # several memory chunks in 32 tokens


def loss_of(model: torch.nn.Module, idx: torch.Tensor) -> torch.Tensor:
    logits = model(idx)
    wide = logits.to(torch.promote_types(logits.dtype, torch.float32))  # bf16 -> float32; float64 stays
    return F.cross_entropy(wide.reshape(-1, logits.shape[-1]), idx.reshape(-1))


def directional_check(model: torch.nn.Module, idx: torch.Tensor, eps: float = 1e-6) -> float:
    """|finite difference - autograd| / |autograd| of the loss along a random direction."""
    params = [p for p in model.parameters()]
    g = torch.Generator().manual_seed(1)
    direction = [torch.randn(p.shape, generator=g, dtype=p.dtype) for p in params]
    loss = loss_of(model, idx)
    grads = torch.autograd.grad(loss, params)
    exact = sum(float((gr * v).sum()) for gr, v in zip(grads, direction, strict=True))
    with torch.no_grad():
        for p, v in zip(params, direction, strict=True):
            p.add_(eps * v)
        up = float(loss_of(model, idx))
        for p, v in zip(params, direction, strict=True):
            p.sub_(2 * eps * v)
        down = float(loss_of(model, idx))
        for p, v in zip(params, direction, strict=True):
            p.add_(eps * v)
    return abs((up - down) / (2 * eps) - exact) / abs(exact)


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_bfloat16_model_forward_backward(arch: str) -> None:
    cfg = tiny(arch)
    idx = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len), generator=torch.Generator().manual_seed(0))
    ref = loss_of(build_model(cfg, seed=0), idx).item()
    model = build_model(cfg, seed=0).to(torch.bfloat16)
    logits = model(idx)
    assert logits.dtype == torch.bfloat16
    loss = F.cross_entropy(logits.float().reshape(-1, cfg.vocab_size), idx.reshape(-1))
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.dtype == torch.bfloat16 and torch.isfinite(p.grad).all(), name
    assert abs(loss.item() - ref) < 0.02 * ref  # bf16 rounding, not a different model


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_float64_model_is_float64_accurate(arch: str) -> None:
    cfg = tiny(arch)
    model = build_model(cfg, seed=0).double()
    idx = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len), generator=torch.Generator().manual_seed(0))
    assert model(idx).dtype == torch.float64
    assert directional_check(model, idx) < 1e-6


def test_float32_rounding_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The float64 Transformer with the norm computed in float32 (as RMSNorm did before) fails."""
    from tlmsearch.models.common import RMSNorm

    def float32_norm(self: RMSNorm, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight

    monkeypatch.setattr(RMSNorm, "forward", float32_norm)
    model = build_model(tiny("transformer"), seed=0).double()
    idx = torch.randint(0, 256, (2, 32), generator=torch.Generator().manual_seed(0))
    assert directional_check(model, idx) > 1e-4
