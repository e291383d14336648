"""bench_models' free-scan ceiling: the stand-ins keep the models' shapes and every parameter's
gradient, and the real scans come back after the block."""

from __future__ import annotations

import pytest
import torch

from bench.bench_models import free_scans, train_step
from tlmsearch.configs.presets import preset
from tlmsearch.models import build_model, hope_attention, titans


@pytest.mark.parametrize("arch", ["titans", "hope_attention"])
def test_free_scan_trains_every_parameter_and_is_undone(arch: str) -> None:
    p = preset("tiny")
    model = build_model(p.model_config(arch, None), seed=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    idx = torch.randint(0, p.vocab_size, (2, p.seq_len + 1), generator=torch.Generator().manual_seed(0))
    real = titans.MemoryScan, hope_attention.FastSwiGLUScan
    with free_scans():
        assert (titans.MemoryScan, hope_attention.FastSwiGLUScan) != real
    assert (titans.MemoryScan, hope_attention.FastSwiGLUScan) == real
    train_step(model, opt, idx, "free-scan")
    assert all(q.grad is not None for q in model.parameters())
    assert (titans.MemoryScan, hope_attention.FastSwiGLUScan) == real
