"""`--gpus-per-trial auto`, the default: one GPU a trial where torch sees a CUDA device (mocked
here), the CPU otherwise; resolved once on the driver, written out in search.yaml, and said in
the plan line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tlmsearch.cli import main
from tlmsearch.configs.search import SearchConfig, gpus_for
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.errors import ConfigError


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("tlmsearch.training.hardware.matmul_peak", lambda device, dtype, cache_dir=None: 9e10)
    monkeypatch.setattr("tlmsearch.costs.calibrate.current_load", lambda cores: 0.0)


def cuda(monkeypatch: pytest.MonkeyPatch, devices: int) -> None:
    """torch reports `devices` CUDA devices (an H200 each)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: devices > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: devices)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "NVIDIA H200")


def test_auto_is_one_gpu_a_trial_with_cuda_and_the_cpu_without() -> None:
    assert SearchConfig().gpus_per_trial == "auto"
    assert gpus_for("auto", cuda_devices=2) == 1.0 and gpus_for("auto", cuda_devices=0) == 0.0
    assert gpus_for(0.25, cuda_devices=0) == 0.25 and gpus_for(0.0, cuda_devices=8) == 0.0
    assert SearchConfig(gpus_per_trial="0.5").gpus_per_trial == 0.5  # a flag's text
    assert SearchConfig.from_dict(SearchConfig(gpus_per_trial="auto").to_dict()).gpus_per_trial == "auto"
    for bad in ("many", -1.0):
        with pytest.raises(ConfigError, match="gpus_per_trial"):
            SearchConfig(gpus_per_trial=bad)


@pytest.mark.parametrize("devices", [0, 2])
def test_resolve_writes_the_share_and_the_trials_train_there(monkeypatch: pytest.MonkeyPatch, devices: int) -> None:
    from tlmsearch.configs.trial import trial_train_config
    from tlmsearch.tuning.resources import trial_device_kind
    from tlmsearch.tuning.runner import resolve

    cuda(monkeypatch, devices)
    cfg = resolve(SearchConfig(preset="tiny", trials=4, train=TrainConfig(steps=20), data=DataConfig(corpus="pydoc")))
    assert cfg.gpus_per_trial == (1.0 if devices else 0.0)
    assert trial_device_kind(cfg) == ("cuda" if devices else "cpu")
    assert trial_train_config(cfg, 0).device == ("cuda" if devices else "auto")
    explicit = resolve(SearchConfig(preset="tiny", trials=4, gpus_per_trial=0.0, train=TrainConfig(steps=20)))
    assert explicit.gpus_per_trial == 0.0  # a number given stays as it is


@pytest.mark.parametrize("devices", [0, 2])
def test_the_dry_run_says_where_the_trials_train(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, devices: int
) -> None:
    cuda(monkeypatch, devices)
    argv = ["search", "--preset", "tiny", "--corpus", "pydoc", "--steps", "30", "--trials", "4", "--name", "g"]
    assert main([*argv, "--runs-dir", str(tmp_path), "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["gpus_per_trial"] == (1.0 if devices else 0.0)
    line = err.strip().splitlines()[-1]
    if devices:
        assert "(transformer, tiny, cuda, 1 GPU a trial)" in line and "NVIDIA H200" in line, line
        assert "2 at a time" in line  # one trial per GPU, two GPUs
    else:
        assert "(transformer, tiny, cpu)" in line and "this CPU's measured matmul peak" in line, line
