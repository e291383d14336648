"""A trial of two data-parallel workers: a Ray Train run inside its Tune trial (on CPU, gloo).

Fixed trials with `workers_per_trial=2` train through `run_fixed` on the shared local Ray (2
CPUs: the trial's two workers take one each); their records say two workers trained them, on
two devices holding both CPUs, and carry the curve of the same run trained alone by `train`
(float32: the two workers' gradient sums round differently, to ~1e-6 nats).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psutil  # Ray's dependency
import pytest

from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.profiles import ProfileSpec
from tlmsearch.training.trainer import train
from tlmsearch.tuning.fixed import FixedTrial, run_fixed

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("ray_session")]


def config(workers: int) -> SearchConfig:
    return SearchConfig(
        name="workers",
        arch="transformer",
        preset="tiny",
        trials=1,
        noise_seeds=0,
        cpus_per_trial=1,
        gpus_per_trial=0,
        workers_per_trial=workers,
        train=TrainConfig(steps=8, warmup_steps=2, eval_interval=4, eval_windows=6, batch_size=4, threads=1),
        data=DataConfig(corpus="pydoc"),
    )


def test_two_workers_per_trial_record_the_numbers_of_one(tmp_path: Path) -> None:
    cfg = config(2)
    items = [FixedTrial(spec=ProfileSpec.parse("cosine:start=1.5,end=0.5"), seed=s) for s in (0, 1)]
    records = run_fixed(tmp_path / "run", cfg, items, "verify")
    assert [r.status for r in records] == ["complete", "complete"]
    for record, item in zip(records, items, strict=True):
        assert record.workers == 2
        assert record.resources == {"CPU": 2.0} and record.devices == ("cpu", "cpu")
        assert record.node is not None and record.steps == 8 and len(record.curve) == 2
        model = record.model_config
        assert model is not None
        alone = train(model, TrainConfig.from_dict(record.train), cfg.data)
        assert TrainConfig.from_dict(record.train).seed == item.seed
        for mine, one in zip(record.curve, alone.curve, strict=True):
            assert mine["step"] == one["step"]
            for key in ("val_loss", "train_loss"):
                assert abs(mine[key] - one[key]) < 1e-4, (key, mine[key], one[key])


def kill_a_worker_after_the_first_checkpoint(run_dir: Path, killed: list[int]) -> None:
    """SIGKILL one Ray Train worker of this test's own Ray (a descendant of this process) once
    the trial's Ray Train run has persisted a checkpoint."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not killed:
        if any(run_dir.rglob("train/session-*/checkpoint_*")):
            for proc in psutil.Process().children(recursive=True):
                try:
                    if "RayTrainWorker" in " ".join(proc.cmdline()):
                        proc.kill()
                        killed.append(proc.pid)
                        return
                except psutil.Error:
                    continue
        time.sleep(0.1)


def test_a_killed_worker_restarts_from_the_last_checkpoint_to_the_same_record(tmp_path: Path) -> None:
    cfg = config(2)
    cfg = cfg.replace(train=cfg.train.replace(steps=12, eval_interval=2))
    killed: list[int] = []
    killer = threading.Thread(target=kill_a_worker_after_the_first_checkpoint, args=(tmp_path, killed), daemon=True)
    killer.start()
    (record,) = run_fixed(tmp_path / "run", cfg, [FixedTrial(spec=ProfileSpec.parse("uniform"))], "verify")
    killer.join()
    assert killed, "no worker was killed"
    assert record.status == "complete" and record.steps == 12 and record.workers == 2
    assert record.retries == 1  # Ray Train's restart of the workers, counted with Tune's retries
    assert [int(c["step"]) for c in record.curve] == [2, 4, 6, 8, 10, 12]  # none lost, none twice
    model = record.model_config
    assert model is not None
    alone = train(model, TrainConfig.from_dict(record.train), cfg.data)
    for mine, one in zip(record.curve, alone.curve, strict=True):
        for key in ("val_loss", "train_loss"):
            assert abs(mine[key] - one[key]) < 1e-4, (mine["step"], key, mine[key], one[key])
