"""One training run (`tlmsearch train`, `tlmsearch.train`) on several data-parallel workers.

The run is a Ray Train `TorchTrainer` on a local Ray (`ray_session.ensure_ray`), exactly as a
trial of several workers is inside its Tune trial (`tuning.train_workers.fit_group`): every
worker trains its share of each step's global batch and the numbers are those of one worker
(`training.parallel`). Each evaluation reaches `report` once, after the checkpoint that goes with
it has been copied into `checkpoint_dir`; a run resumes from the checkpoint found there, on any
number of workers. `stop()` (a signal on the caller's side) is passed to the workers through a
file: they stop together at the next step with a checkpoint, and `TrainingInterrupted` is raised
here, as `train` raises it. A worker that dies is restarted by Ray Train from the last
evaluation's checkpoint (`train_workers.WORKER_RESTARTS` times).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from tlmsearch.configs.search import AUTO_GPUS, check_workers
from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.tuning.ray_session import ensure_ray
from tlmsearch.tuning.resources import ray_nodes, workers_problem

Report = Callable[[int, dict[str, float]], None]


def check_workers_fit(workers: int, threads: int, gpu: bool) -> None:
    """Refuse `workers` workers (each `threads` CPUs and, with `gpu`, one GPU) that the running
    Ray cannot hold at once (Ray Train would wait for them for ever)."""
    problem = workers_problem(ray_nodes(), workers, float(threads), 1.0 if gpu else 0.0)
    if problem:
        raise ConfigError(problem.replace("workers_per_trial", "--workers-per-trial", 1))


def train_on_workers(
    model_cfg: ModelConfig,
    train_cfg: TrainConfig,
    data_cfg: DataConfig,
    report: Report | None = None,
    *,
    workers: int,
    checkpoint_dir: Path | str | None = None,
    checkpoint_every_s: float = 0.0,
    stop: Callable[[], bool] | None = None,
) -> object:
    """`training.trainer.train` on `workers` data-parallel Ray Train workers (see the module doc);
    returns worker 0's `TrainResult`."""
    from tlmsearch.training.hardware import resolve_device  # lazy: heavy (torch)
    from tlmsearch.training.trainer import TrainResult  # lazy: heavy (torch)
    from tlmsearch.tuning.train_workers import Group, WorkerFailure, fit_group  # lazy: heavy (ray)

    check_workers(workers, AUTO_GPUS, train_cfg.batch_size)
    device = resolve_device(train_cfg.device).type  # "cuda" or "cpu": what each worker takes one of
    train_cfg = train_cfg.replace(device="cuda" if device == "cuda" else "cpu", threads=train_cfg.threads or 1)
    ensure_ray()
    check_workers_fit(workers, train_cfg.threads, device == "cuda")
    scratch = Path(tempfile.mkdtemp(prefix="tlmsearch-train-workers-"))
    work = Path(checkpoint_dir) if checkpoint_dir is not None else scratch / "checkpoint"
    work.mkdir(parents=True, exist_ok=True)
    stop_file = scratch / "stop"
    group = Group(
        model_cfg, train_cfg, data_cfg, workers, float(train_cfg.threads),
        stop_file=str(stop_file) if stop is not None else None, checkpoint_every_s=checkpoint_every_s,
    )  # fmt: skip
    start = _checkpoint_in(work)
    ended = threading.Event()
    watcher = None
    if stop is not None:
        watcher = threading.Thread(target=_watch, args=(stop, stop_file, ended), daemon=True)
        watcher.start()
    try:
        result = fit_group(group, work, report or (lambda step, metrics: None), str(scratch / "ray-train"), None, start)
    except WorkerFailure as exc:
        from tlmsearch.training.trainer import TrainingDiverged  # lazy: heavy (torch)

        raise _diverged(str(exc), TrainingDiverged) from None
    finally:
        ended.set()
        if watcher is not None:
            watcher.join()
        shutil.rmtree(scratch, ignore_errors=True)
    if not result:
        raise RuntimeError("the workers ended without a result")
    return TrainResult(
        metrics=dict(result["metrics"]),
        curve=list(result["curve"]),
        model_config=ModelConfig.from_dict(result["model_config"]),
    )


def _checkpoint_in(folder: Path) -> object:
    """A Ray Train checkpoint of `folder` when it holds the trainer's checkpoint, else None."""
    from ray.train import Checkpoint  # lazy: heavy

    from tlmsearch.training.trainer import CHECKPOINT_FILE  # lazy: heavy (torch)

    return Checkpoint.from_directory(str(folder)) if (folder / CHECKPOINT_FILE).is_file() else None


def _watch(stop: Callable[[], bool], stop_file: Path, ended: threading.Event) -> None:
    """Create `stop_file` (the workers' stop request) once `stop()` says so."""
    while not ended.wait(0.2):
        if stop():
            stop_file.touch()
            return


def _diverged(reason: str, kind: type) -> Exception:
    """The workers' failure as `train` raises it: `TrainingDiverged` for a non-finite loss (its step
    and value read back from the reason), else a RuntimeError with the reason."""
    found = re.match(r"TrainingDiverged: training diverged at step (\d+): loss = (\S+)", reason)
    if found:
        return kind(int(found.group(1)), float(found.group(2)))
    return RuntimeError(f"training failed on the workers: {reason}")
