"""--device cuda without a GPU and an unreachable --address are refused in one line, exit 2,
before anything trains or is written (issue 50, items 3 and 11). Nothing here starts Ray: the
trainings are replaced by fakes that fail the test when called."""

from __future__ import annotations

from pathlib import Path

import pytest
from refusals import no_training, one_line, refused_verify, search_run

from tlmsearch.cli import main
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.layout import VERIFY

# ----------------------------------------------------------------------------- item 3: --device cuda


def test_verify_refuses_cuda_without_a_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    run = search_run(tmp_path, monkeypatch)
    line = refused_verify(run, ["--seeds", "2", "--device", "cuda"], capsys)
    assert "cuda" in line and "no CUDA device" in line, line


def test_search_refuses_cuda_without_a_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    no_training(monkeypatch)
    argv = ["search", "--preset", "tiny", "--corpus", "pydoc", "--steps", "20", "--trials", "2", "--device", "cuda"]
    assert main([*argv, "--runs-dir", str(tmp_path), "--name", "s", "--quiet"]) == 2
    line = one_line(capsys)
    assert "no CUDA device" in line, line
    assert not (tmp_path / "s").exists()


def test_train_and_the_commands_share_one_device_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.training.hardware import resolve_device
    from tlmsearch.tuning.resources import check_device

    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    cfg = SearchConfig.from_dict(
        {**SearchConfig().to_dict(), "train": {**SearchConfig().train.to_dict(), "device": "cuda"}}
    )
    with pytest.raises(ConfigError) as shared:
        check_device(cfg)
    with pytest.raises(ConfigError) as trains:
        resolve_device("cuda")
    assert str(shared.value) == str(trains.value)
    check_device(cfg, "10.0.0.1:6379")  # on a cluster the nodes' GPUs decide, not this machine's
    check_device(cfg.replace(train=cfg.train.replace(device="cpu")))


# ----------------------------------------------------------------------------- item 11: --address


def test_verify_writes_nothing_before_its_cluster_is_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import ray

    from tlmsearch.tuning import ray_session

    run = search_run(tmp_path, monkeypatch)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # as a fresh driver finds it

    def unreachable(address: str) -> None:
        raise ConfigError(f"--address {address}: nothing answers there")

    monkeypatch.setattr(ray_session, "probe_address", unreachable)
    line = refused_verify(run, ["--seeds", "2", "--address", "10.0.0.1:6379"], capsys)
    assert "nothing answers" in line, line
    assert not (run / VERIFY).exists()
