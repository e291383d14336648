"""No host synchronisation per step in a pack: a training step reads no tensor value back to the
host, and the loop reads the losses (to drop diverged members) only every `check_every` steps
(16 on an accelerator) and at evaluations. On CPU the reads are counted at the Python methods
that copy a tensor's values to the host; on CUDA torch's sync debug mode refuses any sync."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.training.pack import Member, Pack

PYDOC = DataConfig(corpus="pydoc")
READS = ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__", "__index__")


def members(steps: int, **train: Any) -> list[Member]:
    base: dict[str, Any] = dict(steps=steps, batch_size=2, eval_interval=steps, eval_windows=2, warmup_steps=2)
    base.update(threads=1, grad_clip=0.5, ema_decay=0.9, **train)
    model = preset("tiny").model_config
    return [
        Member(model=model("transformer", (96, 32)), train=TrainConfig(seed=0, **base)),
        Member(model=model("transformer", (32, 96)), train=TrainConfig(seed=1, **base)),
    ]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every host read of a tensor's values from here on, by method name."""
    seen: list[str] = []

    def counting(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def read(self: torch.Tensor, *a: Any, **k: Any) -> Any:
            seen.append(name)
            return original(self, *a, **k)

        return read

    for name in READS:
        monkeypatch.setattr(torch.Tensor, name, counting(name, getattr(torch.Tensor, name)))
    return seen


def test_the_counter_sees_a_read(reads: list[str]) -> None:
    torch.ones(2).sum().item()
    assert reads == ["item"]


def test_a_training_step_reads_nothing_back(reads: list[str]) -> None:
    pack = Pack(members(8), PYDOC)
    reads.clear()
    for _ in range(8):
        pack.train_step()
    assert reads == []


def test_the_loop_reads_the_losses_every_check_every_steps(reads: list[str]) -> None:
    """As on an accelerator (`check_every` 16): between steps 1 and 31 only the check after step
    16 reads; the rest is at step 32 (the check and the evaluation)."""
    pack = Pack(members(32), PYDOC)
    pack.check_every = 16
    counts: dict[int, int] = {}
    reads.clear()
    pack.run(progress=lambda step: counts.setdefault(step, len(reads)))
    read_after = [s for s in range(1, 32) if counts[s + 1] > counts[s]]
    assert read_after == [16]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_step_never_synchronises() -> None:
    torch.set_default_dtype(torch.float32)
    pack = Pack(members(4, device="cuda", dtype="bfloat16"), PYDOC)
    pack.train_step()  # the first step's lazy initialisation is not the loop
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            pack.train_step()
    finally:
        torch.cuda.set_sync_debug_mode("default")
