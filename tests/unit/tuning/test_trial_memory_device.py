"""A trial's memory is checked on the device it trains on: the host's memory for a CPU trial, the
free memory of the GPU for a GPU trial (in bfloat16), and no refusal where the driver cannot see
the GPU a trial will get (Ray places it, maybe on another node). A GPU search used to be refused
for the driver's host memory."""

from __future__ import annotations

import pytest

from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.core.validate import available_for, check_training_fits, estimate_eval_bytes, estimate_training_bytes
from tlmsearch.errors import ConfigError

GIB = 2**30


def host(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    monkeypatch.setattr("tlmsearch.core.validate.available_memory_bytes", lambda: size)


def cuda(monkeypatch: pytest.MonkeyPatch, free: int | None) -> list[object]:
    """torch sees one CUDA device with `free` bytes free (None: no CUDA); returns the devices asked."""
    import torch

    asked: list[object] = []

    def mem_get_info(device: object = None) -> tuple[int, int]:
        asked.append(device)
        assert free is not None
        return free, 141 * GIB

    monkeypatch.setattr(torch.cuda, "is_available", lambda: free is not None)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0 if free is None else 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "mem_get_info", mem_get_info)
    return asked


def test_available_for_each_device(monkeypatch: pytest.MonkeyPatch) -> None:
    host(monkeypatch, 3 * GIB)
    cuda(monkeypatch, None)
    assert available_for("cpu") == 3 * GIB
    assert available_for("auto") == 3 * GIB  # auto without CUDA trains on the host
    assert available_for("cuda") is None  # a GPU this process cannot see: unknown, not the host's
    assert available_for("cuda:1") is None
    asked = cuda(monkeypatch, 5 * GIB)
    assert available_for("cpu") == 3 * GIB
    assert available_for("cuda") == 5 * GIB
    assert available_for("auto") == 5 * GIB
    assert available_for("cuda:0") == 5 * GIB
    assert [str(d) for d in asked] == ["cuda", "cuda", "cuda:0"]
    assert available_for("mps") is None


def test_check_training_fits_reads_the_trains_device(monkeypatch: pytest.MonkeyPatch) -> None:
    from tlmsearch.configs.presets import preset

    model = preset("tiny").model_config("transformer")
    host(monkeypatch, 1024)  # a host far too small for anything
    cuda(monkeypatch, None)
    cpu = TrainConfig(batch_size=4, eval_windows=8, device="cpu")
    with pytest.raises(ConfigError, match=r"this trial needs about .* but only 1.0 KiB is available"):
        check_training_fits(model, cpu)
    gpu = cpu.replace(device="cuda", dtype="bfloat16")
    need = estimate_training_bytes(model, 4, model.seq_len, "bfloat16") + estimate_eval_bytes(8, model.seq_len)
    assert check_training_fits(model, gpu) == need  # GPU not visible here: not refused for the host
    cuda(monkeypatch, need - 1)
    with pytest.raises(ConfigError, match="but only"):
        check_training_fits(model, gpu)  # the GPU's free memory decides
    cuda(monkeypatch, need)
    assert check_training_fits(model, gpu) == need


def test_a_gpu_search_is_not_refused_for_the_drivers_host_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    from tlmsearch.tuning.runner import resolve

    monkeypatch.setattr("tlmsearch.training.hardware.matmul_peak", lambda device, dtype, cache_dir=None: 9e10)
    host(monkeypatch, 1024)
    cuda(monkeypatch, None)
    cfg = SearchConfig(preset="tiny", trials=4, train=TrainConfig(steps=20), data=DataConfig(corpus="pydoc"))
    with pytest.raises(ConfigError, match="this trial needs about"):
        resolve(cfg.replace(gpus_per_trial=0.0))
    assert resolve(cfg.replace(gpus_per_trial=1.0)).gpus_per_trial == 1.0  # its GPU is Ray's to place
    cuda(monkeypatch, 1024)  # the driver sees a GPU, and it is full
    with pytest.raises(ConfigError, match="this trial needs about .* but only 1.0 KiB"):
        resolve(cfg.replace(gpus_per_trial=1.0))
    cuda(monkeypatch, 100 * GIB)
    assert resolve(cfg.replace(gpus_per_trial=1.0)).gpus_per_trial == 1.0
