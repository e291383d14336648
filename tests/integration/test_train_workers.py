"""`tlmsearch train --workers-per-trial 2` and `tlmsearch.train(..., workers_per_trial=2)`: one run
on two data-parallel Ray Train workers (gloo, on the shared local Ray) ends with the curve and
final metrics of the same run trained alone (float32: the two workers' gradient sums round
differently, to ~1e-6 nats), and its summary says two workers trained it. A run stopped by the
caller's `stop()` (as Ctrl-C asks `tlmsearch train`) stops all workers at the same step with a
checkpoint, and resumes from it, on one worker, to the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tlmsearch
from tlmsearch.cli import main
from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.training.trainer import CHECKPOINT_FILE, TrainingInterrupted, train

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("ray_session")]

TOL = 1e-4
TRAIN = TrainConfig(steps=8, warmup_steps=2, eval_interval=4, eval_windows=6, batch_size=4, threads=1)
DATA = DataConfig(corpus="pydoc")


def model():  # type: ignore[no-untyped-def]
    return preset("tiny").model_config("transformer", (96, 32))


def close(mine: list[dict], alone: list[dict]) -> None:
    assert [int(c["step"]) for c in mine] == [int(c["step"]) for c in alone]
    for a, b in zip(mine, alone, strict=True):
        for key in ("val_loss", "train_loss", "tokens"):
            assert abs(a[key] - b[key]) < TOL, (a["step"], key, a[key], b[key])


def test_the_command_trains_on_two_workers_to_the_numbers_of_one(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    flags = ["--preset", "tiny", "--corpus", "pydoc", "--steps", "8", "--warmup-steps", "2", "--eval-interval", "4"]
    flags += ["--batch-size", "4", "--runs-dir", str(tmp_path), "--json"]
    assert main(["train", *flags, "--name", "one"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert main(["train", *flags, "--name", "two", "--workers-per-trial", "2"]) == 0
    out = capsys.readouterr()
    two = json.loads(out.out)
    assert "on each of 2 data-parallel workers (Ray Train)" in out.err
    assert one["workers"] == 1 and two["workers"] == 2
    assert json.loads((tmp_path / "two" / "summary.json").read_text())["workers"] == 2
    curve = [json.loads(line) for line in (tmp_path / "two" / "metrics.jsonl").read_text().splitlines()]
    assert len(curve) == 2
    for key in ("val_loss", "val_bpb", "train_loss", "steps", "tokens", "params_total"):
        assert abs(one["metrics"][key] - two["metrics"][key]) < TOL, key
    assert not (tmp_path / "two" / "checkpoint").exists()


def test_the_api_stops_and_resumes_on_other_workers_to_the_same_numbers(tmp_path: Path) -> None:
    alone = train(model(), TRAIN, DATA)
    seen: list[int] = []
    with pytest.raises(TrainingInterrupted) as stopped:  # asked before the workers start: they stop after step 1
        tlmsearch.train(
            model(), TRAIN, DATA, lambda step, m: seen.append(step),
            workers_per_trial=2, checkpoint_dir=tmp_path, stop=lambda: True,
        )  # fmt: skip
    assert seen == [] and stopped.value.step == 1
    assert (tmp_path / CHECKPOINT_FILE).is_file()
    rest = tlmsearch.train(model(), TRAIN, DATA, checkpoint_dir=tmp_path)  # one worker from here
    close(rest.curve, alone.curve)
    both = tlmsearch.train(model(), TRAIN, DATA, workers_per_trial=2)
    close(both.curve, alone.curve)
    assert both.model_config == alone.model_config
