"""`tlmsearch train --workers-per-trial N` refuses, in one line with exit 2 and before the run
directory exists or Ray starts, a count that is not a whole number >= 1 or that the batch cannot
feed; the Python API refuses per-step options several workers do not take."""

from __future__ import annotations

from pathlib import Path

import pytest
from refusals import one_line

import tlmsearch
from tlmsearch.cli import main
from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.errors import ConfigError


def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("Ray must not start after a refusal")

    monkeypatch.setattr("tlmsearch.tuning.ray_session.ensure_ray", started)
    monkeypatch.setattr("tlmsearch.tuning.train_run.ensure_ray", started)


@pytest.mark.parametrize(
    ("workers", "expected"),
    [
        ("0", "--workers-per-trial 0 must"),
        ("8", "--workers-per-trial 8 exceeds train.batch_size=4: every worker reads at least one window"),
    ],
)
def test_a_count_the_run_cannot_use_is_refused_in_one_line(
    workers: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    no_ray(monkeypatch)
    argv = ["train", "--preset", "tiny", "--corpus", "pydoc", "--steps", "2", "--batch-size", "4"]
    code = main([*argv, "--runs-dir", str(tmp_path), "--name", "w", "--workers-per-trial", workers])
    assert code == 2
    assert expected in one_line(capsys)
    assert not (tmp_path / "w").exists()


def test_the_api_refuses_what_several_workers_do_not_take(monkeypatch: pytest.MonkeyPatch) -> None:
    no_ray(monkeypatch)
    cfg = preset("tiny").model_config("transformer", (96, 32))
    with pytest.raises(ConfigError, match="train: progress with workers_per_trial=2: several workers take"):
        tlmsearch.train(cfg, TrainConfig(steps=2), DataConfig(corpus="pydoc"), workers_per_trial=2, progress=print)
    with pytest.raises(ConfigError, match="workers_per_trial=3 exceeds train.batch_size=2"):
        tlmsearch.train(cfg, TrainConfig(steps=2, batch_size=2), DataConfig(corpus="pydoc"), workers_per_trial=3)
