"""A trial of several data-parallel workers: a Ray Train run inside its Tune trial.

Ray's documented pattern for distributed runs under Tune (Train V2, the default of the
installed Ray): the Tune trial's function builds a `TorchTrainer` and calls `fit()`; the
`ScalingConfig` holds the workers, each with the trial's CPUs and GPUs per worker; the Tune
trial itself reserves nothing (`tuning.runner.trainable_for`), and the number of trials at once
is capped so that their workers fit (`tuning.announce.slots`).

Every worker runs `train(..., parallel=...)` (`tlmsearch.training.parallel`: DDP over the
process group Ray Train sets up, gloo on CPU, NCCL on GPU) and calls `ray.train.report` at each
evaluation, worker 0 with a copy of its new checkpoint, which Ray Train persists to the run's
storage below the Tune trial's folder. A controller callback (`_Forward`) passes worker 0's
report and the persisted checkpoint to the Tune trial's function through a Ray queue; there
they become the trial's own report and Tune checkpoint, as for a single-worker trial
(`tuning.trainable.run_trial`), so scheduling, records, resume after a killed driver and
checkpoint clean-up do not tell the two apart. A killed worker makes Ray Train restart the
group from the last persisted checkpoint (`FailureConfig`); an evaluation the restart repeats
is passed on once. An exception in training (a divergence) is reported by every worker and
ends the trial as failed with its reason, without restarts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray.train import UserCallback

from tlmsearch.configs.trial import TrialSpec
from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.errors import failure_reason

TRAIN_DIR = "train"  # in the Tune trial's folder: the Ray Train runs of its sessions (removed as each ends)
WORKER_RESTARTS = 3  # Ray Train's restarts of a trial's worker group after a worker died
_DONE = "done"
_RESTART = "restart"


class WorkerFailure(Exception):
    """Training raised on the workers: the message is the reason worker 0 gave."""


@dataclasses.dataclass(frozen=True)
class Group:
    """One run trained by `workers` Ray Train workers, each holding `cpus` CPUs and, with device
    cuda, one GPU; `stop_file` (a local path, or None) asks the workers to stop with a checkpoint
    once it exists; `checkpoint_every_s` adds checkpoints by wall time (persisted with the next report)."""

    model: ModelConfig
    train: TrainConfig
    data: DataConfig
    workers: int
    cpus: float = 1.0
    stop_file: str | None = None
    checkpoint_every_s: float = 0.0

    def loop_config(self) -> dict[str, Any]:
        return {
            "model": self.model.to_dict(),
            "train": self.train.to_dict(),
            "data": self.data.to_dict(),
            "stop_file": self.stop_file,
            "checkpoint_every_s": self.checkpoint_every_s,
        }


def fit_workers(
    spec: TrialSpec,
    work: Path,
    report: Callable[[int, dict[str, float]], None],
    start: Any = None,
    placement: Callable[[list[dict[str, Any]]], None] | None = None,
    restarted: Callable[[int], None] | None = None,
) -> None:
    """Train `spec` on `spec.workers` Ray Train workers from the Tune trial's function:
    `report(step, metrics)` is called for each evaluation after the checkpoint that goes with
    it (if any) has been copied into `work` (where `run_trial` looks for it); `start` is the
    checkpoint to begin from (a Tune checkpoint, None: step 0); `placement(workers)` receives
    each worker's node and devices once; `restarted(n)` hears each restart of the worker group
    (n so far in this session)."""
    import ray.train
    from ray import tune

    assert spec.model is not None
    storage = tune.get_context().get_storage()
    group = Group(spec.model, spec.train, spec.data, spec.workers, float(spec.resources.get("CPU", 1.0)))
    # a Tune checkpoint (another class in Train V2) as the Train checkpoint the workers start from
    begin = ray.train.Checkpoint(start.path, start.filesystem) if start is not None else None
    root = f"{storage.trial_fs_path.rstrip('/')}/{TRAIN_DIR}"
    fit_group(group, work, report, root, storage.storage_filesystem, begin, placement, restarted)


def fit_group(
    group: Group,
    work: Path,
    report: Callable[[int, dict[str, float]], None],
    root: str,
    filesystem: Any = None,
    start: Any = None,
    placement: Callable[[list[dict[str, Any]]], None] | None = None,
    restarted: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Train `group` as a Ray Train run whose folders go below `root` (on `filesystem`, None: the
    local disk; removed at the end); `start` is a Ray Train checkpoint to begin from. Returns worker
    0's `TrainResult.to_dict()`; raises `WorkerFailure` when training raised on the workers,
    `TrainingInterrupted` when they stopped on `group.stop_file` (its checkpoint copied into `work`)."""
    import ray.train
    from ray.train.torch import TorchTrainer
    from ray.util.queue import Empty, Queue

    from tlmsearch.training.trainer import CHECKPOINT_FILE, TrainingInterrupted  # lazy: heavy (numpy, torch)

    queue: Any = Queue(actor_options={"num_cpus": 0})
    gpu = group.train.device == "cuda"
    per_worker = {"CPU": group.cpus} | ({"GPU": 1.0} if gpu else {})
    trainer = TorchTrainer(
        _worker_loop,
        train_loop_config=group.loop_config(),
        scaling_config=ray.train.ScalingConfig(num_workers=group.workers, use_gpu=gpu, resources_per_worker=per_worker),
        run_config=ray.train.RunConfig(
            name=f"session-{uuid.uuid4().hex[:8]}",  # never restored by a later session: Tune's checkpoint is
            storage_path=root,
            storage_filesystem=filesystem,
            failure_config=ray.train.FailureConfig(max_failures=WORKER_RESTARTS),
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=2),
            callbacks=[_Forward(queue)],  # type: ignore[list-item]
        ),
        resume_from_checkpoint=start,
    )
    outcome: dict[str, BaseException] = {}

    def fit() -> None:
        try:
            trainer.fit()
        except BaseException as exc:  # noqa: BLE001 - raised again in the trial's thread below
            outcome["error"] = exc
        finally:
            queue.put(_DONE)

    thread = threading.Thread(target=fit, name="tlmsearch-train-fit", daemon=True)
    thread.start()
    last_step, failure, interrupted, restarts = -1, None, None, 0
    result: dict[str, Any] = {}
    try:
        while True:
            try:
                item = queue.get(timeout=1.0)
            except Empty:
                if not thread.is_alive() and queue.empty():
                    break
                continue
            if item == _DONE:
                break
            if item == _RESTART:
                restarts += 1
                if restarted is not None:
                    restarted(restarts)
                continue
            reports, checkpoint = item
            mine = reports[0]
            if checkpoint is not None:
                with checkpoint.as_directory() as d:
                    shutil.copy2(Path(d) / CHECKPOINT_FILE, work / f"{CHECKPOINT_FILE}.tmp")
                (work / f"{CHECKPOINT_FILE}.tmp").replace(work / CHECKPOINT_FILE)
            if "failed" in mine:
                failure = str(mine["failed"])
            elif "interrupted" in mine:
                interrupted = int(mine["interrupted"])
            elif "result" in mine:
                result = dict(mine["result"])
            else:
                if placement is not None and "placement" in mine:
                    placement([r["placement"] for r in reports])
                    placement = None
                step = int(mine["step"])
                if step > last_step:  # a restarted group repeats the evaluations after its checkpoint
                    last_step = step
                    report(step, dict(mine["metrics"]))
    finally:
        thread.join()
        _remove(filesystem, root)
        with contextlib.suppress(Exception):  # the queue's actor goes with the trial
            queue.shutdown()
    if failure is not None:
        raise WorkerFailure(failure)
    if "error" in outcome:
        raise outcome["error"]
    if interrupted is not None:
        raise TrainingInterrupted(interrupted, work / CHECKPOINT_FILE)
    return result


def _remove(filesystem: Any, root: str) -> None:
    with contextlib.suppress(Exception):  # a leftover folder is no reason to fail a trained trial
        if filesystem is None:
            shutil.rmtree(root)
        else:
            filesystem.delete_dir(root)


class _Forward(UserCallback):  # type: ignore[misc]
    """On Ray Train's controller: every report of the workers, with the checkpoint it persisted,
    into the queue the Tune trial's function reads; and a mark for each failure of the worker group
    (Ray Train restarts it from the last persisted checkpoint)."""

    def __init__(self, queue: Any) -> None:
        self.queue = queue

    def after_report(self, run_context: Any, metrics: list[dict[str, Any]], checkpoint: Any) -> None:
        self.queue.put((metrics, checkpoint))

    def after_exception(self, run_context: Any, worker_exceptions: dict[int, Exception]) -> None:
        self.queue.put(_RESTART)


def _worker_loop(config: dict[str, Any]) -> None:
    """One Ray Train worker of the run: its share of every step (see the module doc)."""
    import os

    import ray.train
    import torch

    from tlmsearch.training.parallel import DataParallel  # lazy: heavy (torch)
    from tlmsearch.training.trainer import CHECKPOINT_FILE, TrainingInterrupted, train  # lazy: heavy (torch)

    model = ModelConfig.from_dict(config["model"])
    train_cfg = TrainConfig.from_dict(config["train"])
    data = DataConfig.from_dict(config["data"])
    torch.set_num_threads(train_cfg.threads)
    device = "cpu"
    if train_cfg.device == "cuda":
        import ray.train.torch

        gpu = ray.train.torch.get_device()
        torch.cuda.set_device(gpu)
        device = f"GPU {gpu.index} ({torch.cuda.get_device_name(gpu)})"
    parallel = DataParallel.from_process_group()
    node = ray.get_runtime_context().get_node_id()
    work = Path(tempfile.mkdtemp(prefix="tlmsearch-worker-"))
    stop_file = config.get("stop_file")
    try:
        checkpoint = ray.train.get_checkpoint()  # after a restart, or the one to resume from
        if checkpoint is not None:
            with checkpoint.as_directory() as d:
                shutil.copy2(Path(d) / CHECKPOINT_FILE, work / CHECKPOINT_FILE)
        saved = [_mtime(work / CHECKPOINT_FILE)]
        first = [True]

        def send(out: dict[str, Any]) -> None:
            """`ray.train.report(out)`, worker 0's with a copy of a checkpoint written since the last."""
            copy = None
            if parallel.writer and _mtime(work / CHECKPOINT_FILE) != saved[0]:
                saved[0] = _mtime(work / CHECKPOINT_FILE)
                copy = Path(tempfile.mkdtemp(prefix="tlmsearch-report-"))
                shutil.copy2(work / CHECKPOINT_FILE, copy / CHECKPOINT_FILE)
            ckpt = ray.train.Checkpoint.from_directory(str(copy)) if copy is not None else None
            try:
                ray.train.report(out, checkpoint=ckpt)
            finally:
                if copy is not None:
                    shutil.rmtree(copy, ignore_errors=True)

        def report(step: int, metrics: dict[str, float]) -> None:
            out: dict[str, Any] = {"step": step, "metrics": metrics}
            if first[0]:
                out["placement"] = {"node": node, "device": device, "pid": os.getpid()}
                first[0] = False
            send(out)

        stop = (lambda: os.path.exists(stop_file)) if stop_file else None
        try:
            result = train(
                model,
                train_cfg,
                data,
                report=report,
                checkpoint_dir=work,
                parallel=parallel,
                stop=stop,
                checkpoint_every_s=float(config.get("checkpoint_every_s") or 0.0),
            )
        except TrainingInterrupted as exc:  # every worker stops at the same step (they agree on it)
            send({"interrupted": exc.step})
        except Exception as exc:  # every worker meets it at the same step (their numbers are equal)
            ray.train.report({"failed": failure_reason(exc)})
        else:
            ray.train.report({"result": result.to_dict() if parallel.writer else None})
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _mtime(path: Path) -> int:
    return path.stat().st_mtime_ns if path.exists() else 0
