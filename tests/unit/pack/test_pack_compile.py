"""torch.compile inside a pack: the members' vmapped forward compiled when `compile` is asked for.

On CPU the compiled pack must give the eager pack's numbers (float64: to 1e-10; Inductor's
fused kernels sum in another order); slow (Inductor compiles for about a minute on one loaded
core), skipped where Inductor cannot compile (no C++ compiler). On CUDA the same under bf16
autocast for every family (skipped without CUDA).
"""

from __future__ import annotations

import shutil

import pytest
import torch

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.training.pack import Member, Pack, train_pack

PYDOC = DataConfig(corpus="pydoc")


def members(arch: str = "transformer", **train: object) -> list[Member]:
    base: dict[str, object] = dict(steps=4, batch_size=4, eval_interval=2, eval_windows=4, warmup_steps=1, threads=1)
    base.update(train)
    model = preset("tiny").model_config
    return [
        Member(model=model(arch, (96, 32)), train=TrainConfig(seed=0, **base)),  # type: ignore[arg-type]
        Member(model=model(arch, (64, 64)), train=TrainConfig(seed=1, **base)),  # type: ignore[arg-type]
    ]


@pytest.mark.slow
def test_the_pack_compiles_its_forward_only_when_asked() -> None:
    eager = Pack(members(), PYDOC)
    assert eager._batched(False) is eager._batched(False)  # built once
    assert not hasattr(eager._batched(False), "_torchdynamo_orig_callable")
    compiled = Pack(members(compile=True), PYDOC)
    assert hasattr(compiled._batched(False), "_torchdynamo_orig_callable")  # torch.compile's wrapper


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None, reason="Inductor needs a C++ compiler")
def test_a_compiled_pack_trains_as_the_eager_pack() -> None:
    torch._dynamo.reset()
    eager = train_pack(members(), PYDOC)
    compiled = train_pack(members(compile=True), PYDOC)
    for a, b in zip(eager, compiled, strict=True):
        assert a.result is not None and b.result is not None
        for x, y in zip(a.result.curve, b.result.curve, strict=True):
            assert x["val_loss"] == pytest.approx(y["val_loss"], abs=1e-10)
            assert x["train_loss"] == pytest.approx(y["train_loss"], abs=1e-10)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("arch", ["transformer", "gated_attention", "hope_attention", "titans"])
def test_a_compiled_pack_trains_every_family_in_bf16_on_cuda(arch: str) -> None:
    torch.set_default_dtype(torch.float32)
    torch._dynamo.reset()
    cuda = dict(device="cuda", dtype="bfloat16")
    eager = train_pack(members(arch, **cuda), PYDOC)
    compiled = train_pack(members(arch, compile=True, **cuda), PYDOC)
    for a, b in zip(eager, compiled, strict=True):
        assert a.result is not None and b.result is not None
        assert a.result.metrics["val_loss"] == pytest.approx(b.result.metrics["val_loss"], abs=0.02)
