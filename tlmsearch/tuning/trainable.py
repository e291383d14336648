"""The function Ray Tune runs in each trial: one real training run of one width profile.

The trial's Tune config holds its `TrialSpec` under `SPEC`, resolved on the driver
(`tuning.specs.with_spec`): the worker trains exactly that and resolves nothing itself. Beside
it, the config holds the trial's small identity keys (`profile`, `number`, `baseline`, `seed`,
the Optuna params), read by Tune, Optuna, the scheduler and the checkpoints.

Every evaluation goes to `ray.tune.report`: flat metrics for the scheduler and the searcher,
and under `OUTCOME` the `TrialOutcome` so far, which the driver turns into the record with the
spec (`recorder.record_of`). A new checkpoint of the trainer goes with the report, with the
trial's identity (`checkpoints.TRIAL_FILE`) by which a resume finds it; a config naming an
earlier session's checkpoint (`RESTORE`) starts from it. With a speed objective the final
evaluation adds a micro-benchmark against the uniform reference the spec carries. A trial
whose training raises, or whose spec could not be resolved, reports `failed=1` and its reason
and ends normally: Ray's retries (`max_failures`) stay for dead workers.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from tlmsearch.configs.search import OBJECTIVE_METRICS
from tlmsearch.configs.trial import OUTCOME, RESTORE, SPEC, TRAIN_RESTARTS, TrialOutcome, TrialSpec
from tlmsearch.configs.trial import trial_train_config as trial_train_config  # the driver's, re-exported
from tlmsearch.core.base import ModelConfig, TrainConfig
from tlmsearch.costs.throughput import ThroughputConfig, trial_metrics
from tlmsearch.errors import failure_reason
from tlmsearch.models.counts import count_params
from tlmsearch.tuning.checkpoints import CURVE_FILE, TRIAL_FILE, identity_config

PROGRESS_DIR = "progress"  # in the driver's scratch folder: one `<trial id>.json` per running trial
PROGRESS_EVERY_S = 5.0  # a trial writes its step at most this often
TRIAL_TMP_ENV = "TLMSEARCH_TRIAL_TMP"  # the driver's scratch folder for trial folders (see tuning.runner)


def speed_metrics(train_cfg: TrainConfig, model_cfg: ModelConfig, reference: ModelConfig | None) -> dict[str, float]:
    """The trial's measured speed against the uniform `reference` its spec carries (see the
    module doc); {} when no objective asks for it (the spec then carries no reference)."""
    if reference is None:
        return {}
    device = train_cfg.device
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    bench = ThroughputConfig(batch_size=train_cfg.batch_size, threads=train_cfg.threads, device=device)
    return trial_metrics(model_cfg, reference, bench)


def restored_curve(work: Path, checkpoint_file: str) -> list[dict[str, float]]:
    """The curve of a checkpoint restored into `work`, or [] after removing a checkpoint that a
    kill cut short (its copy into the run directory was not finished): the trial then trains
    again from step 0, to the same numbers, instead of failing on a checkpoint it cannot read."""
    import zipfile

    ckpt, curve_path = work / checkpoint_file, work / CURVE_FILE
    try:
        with zipfile.ZipFile(ckpt) as archive:  # torch.save writes a zip archive
            whole = archive.testzip() is None
        curve = json.loads(curve_path.read_text()) if curve_path.is_file() else []
        whole = whole and isinstance(curve, list)
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError, ValueError):
        whole = False
    if whole:
        return curve
    ckpt.unlink(missing_ok=True)
    curve_path.unlink(missing_ok=True)
    return []


def restore(checkpoint: Any, source: str | None, work: Path) -> list[dict[str, float]]:
    """Copy `checkpoint` (this trial's own), else the checkpoint at `source` (an earlier
    session's, of the same trial) into `work`; its curve, or [] (training starts at step 0)
    without one, or when it cannot be read (gone, cut short)."""
    if checkpoint is None and not source:
        return []
    from ray import tune

    from tlmsearch.training.trainer import CHECKPOINT_FILE  # lazy: heavy (numpy, torch)

    try:
        with (checkpoint or tune.Checkpoint(str(source))).as_directory() as d:
            shutil.copytree(d, work, dirs_exist_ok=True)
    except Exception:  # noqa: BLE001 - any storage error: the trial trains again from its start
        return []
    return restored_curve(work, CHECKPOINT_FILE)


def _mtime(path: Path) -> int:
    return path.stat().st_mtime_ns if path.exists() else 0


def _assigned_gpus() -> list[str]:
    import ray

    return [str(i) for i in ray.get_runtime_context().get_accelerator_ids().get("GPU", [])]


def use_assigned_gpu(device: str) -> int | None:
    """On CUDA, make the GPU Ray assigned to this trial torch's current device, so that
    `torch.device("cuda")` in the trainer means that GPU; returns its torch index (None off CUDA)."""
    if device != "cuda":
        return None
    import torch

    from tlmsearch.training.hardware import assigned_cuda_index  # lazy: heavy (torch)

    index = assigned_cuda_index(_assigned_gpus(), os.environ.get("CUDA_VISIBLE_DEVICES"))
    if torch.cuda.is_available() and index < torch.cuda.device_count():
        torch.cuda.set_device(index)
    return index


def _placement(asked: dict[str, float], device: str) -> dict[str, Any]:
    """The Ray node this trial runs on, the devices it was given and the resources Ray reserved
    for it (recorded per trial; a GPU fraction such as 0.25 appears as {"GPU": 0.25}).

    Ray sets CUDA_VISIBLE_DEVICES to the GPUs it assigned, so torch's device i is Ray's GPU
    `ids[i]`; the device name is added where CUDA is really there.
    """
    import ray

    ctx = ray.get_runtime_context()
    ids = _assigned_gpus()
    devices = [f"GPU {i}" for i in ids]
    if ids and device == "cuda":
        try:
            import torch

            if torch.cuda.is_available():
                devices = [f"GPU {i} ({torch.cuda.get_device_name(k)})" for k, i in enumerate(ids)]
        except Exception:  # noqa: BLE001 - the name is a courtesy; the ids are what matter
            pass
    try:
        resources = {str(k): float(v) for k, v in ctx.get_assigned_resources().items() if k in ("CPU", "GPU")}
    except Exception:  # noqa: BLE001 - e.g. outside a Ray worker
        resources = {}
    if not resources:  # what the trial asked Ray for (its spec's resources)
        resources = dict(asked)
    return {"node": ctx.get_node_id(), "devices": devices or ["cpu"], "resources": resources}


def _workers_placement(spec: TrialSpec) -> dict[str, Any]:
    """A trial of several workers before they report where they run: the resources all of
    them hold (each worker the spec's CPUs and a whole GPU or none)."""
    import ray

    n = spec.workers
    resources = {"CPU": float(spec.resources.get("CPU", 1.0)) * n}
    if spec.resources.get("GPU"):
        resources["GPU"] = float(n)
    node = ray.get_runtime_context().get_node_id()
    return {"node": node, "devices": ["cpu"] * n, "resources": resources}


def param_counts(model: ModelConfig) -> dict[str, float]:
    """The parameter counts every report (and the record's metrics) carries."""
    return count_params(model).metrics()


def run_trial(config: dict[str, Any]) -> None:
    """Ray Tune function trainable: train the `TrialSpec` in `config[SPEC]` (see the module doc)."""
    import torch
    from ray import tune

    from tlmsearch.training.trainer import CHECKPOINT_FILE, train  # lazy: heavy (numpy, torch)

    config = config["item"] if "item" in config else config  # run_fixed's grid search
    spec = TrialSpec.from_dict(config[SPEC])
    train_cfg = spec.train
    torch.set_num_threads(train_cfg.threads)  # the CPUs Ray gave the trial (or train.threads)
    use_assigned_gpu(train_cfg.device)
    scratch = os.environ.get(TRIAL_TMP_ENV, "")
    work = Path(tempfile.mkdtemp(prefix="tlmsearch-trial-", dir=scratch if os.path.isdir(scratch) else None))
    start = tune.get_checkpoint()
    curve = restore(start, config.get(RESTORE), work)
    if start is None and config.get(RESTORE):
        start = tune.Checkpoint(str(config[RESTORE]))
    identity = json.dumps(identity_config(config))
    where = _placement(spec.resources, train_cfg.device) if spec.workers == 1 else _workers_placement(spec)
    static: dict[str, Any] = {**where, **(param_counts(spec.model) if spec.model is not None else {})}
    counts = {k: v for k, v in static.items() if k.startswith("params_")}
    if spec.workers > 1:  # in the record's metrics: how many workers trained it (`TrialRecord.workers`)
        counts["workers"] = float(spec.workers)
        static["workers"] = float(spec.workers)
    saved = [_mtime(work / CHECKPOINT_FILE)]

    def outcome(status: str, steps: int, metrics: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        return TrialOutcome(
            status=status, reason=reason, steps=steps, curve=tuple(curve), metrics=metrics, **where
        ).to_dict()

    def report(step: int, metrics: dict[str, float]) -> None:
        if step >= train_cfg.steps and spec.model is not None:
            metrics = {**metrics, **speed_metrics(train_cfg, spec.model, spec.reference)}
        curve.append(dict(metrics))
        flat = {**static, **metrics, "step": int(step)}
        for key, source in OBJECTIVE_METRICS.items():
            if source in flat:
                flat[key] = flat[source]
        status = "ended" if step >= train_cfg.steps else "running"
        flat[OUTCOME] = outcome(status, int(step), {**metrics, **counts})
        checkpoint = None
        if _mtime(work / CHECKPOINT_FILE) != saved[0]:  # the trainer wrote a new one (train.checkpoint_interval)
            saved[0] = _mtime(work / CHECKPOINT_FILE)
            (work / CURVE_FILE).write_text(json.dumps(curve))  # the curve up to the checkpoint's step
            (work / TRIAL_FILE).write_text(identity)  # the trial it belongs to (a resume finds it by this)
            checkpoint = tune.Checkpoint.from_directory(str(work))
        tune.report(flat, checkpoint=checkpoint)

    step_file = progress_file(tune.get_context().get_trial_id())
    tokens_per_step = [0]

    first: list[tuple[int, float]] = []  # (step, time) after this session's first (warm-up) step
    last_write = [0.0]

    def on_step(step: int) -> None:
        now = time.monotonic()
        if not first:
            first.append((step, now))
        if step_file is None or now - last_write[0] < PROGRESS_EVERY_S or step <= first[0][0]:
            return
        last_write[0] = now
        s_per_step = (now - first[0][1]) / (step - first[0][0])
        write_progress(step_file, step, train_cfg.steps, s_per_step, tokens_per_step[0])

    try:
        if spec.model is None:  # resolved on the driver and found untrainable: fail with its reason
            raise _Unresolved(spec.error or "the trial has no model")
        tokens_per_step[0] = train_cfg.batch_size * train_cfg.grad_accum * spec.model.seq_len
        if curve and int(curve[-1]["step"]) >= train_cfg.steps:  # it ended before its driver recorded it
            last = curve.pop()
            report(int(last["step"]), last)  # its result again (its checkpoint is its last evaluation)
        elif spec.workers > 1:  # a Ray Train run of the trial's workers (tuning.train_workers)
            from tlmsearch.tuning.train_workers import fit_workers  # lazy: heavy (ray)

            def placed(workers: list[dict[str, Any]]) -> None:
                where.update(node=workers[0]["node"], devices=[w["device"] for w in workers])
                static.update(node=where["node"], devices=where["devices"])

            def restarted(n: int) -> None:  # Ray Train restarted the workers: the record's `retries` count it
                static[TRAIN_RESTARTS] = float(n)

            begin = start if (work / CHECKPOINT_FILE).is_file() else None
            fit_workers(spec, work, report, begin, placement=placed, restarted=restarted)
        else:
            train(spec.model, train_cfg, spec.data, report=report, checkpoint_dir=work, progress=on_step)
    except Exception as exc:  # recorded as failed; the search goes on
        reason = str(exc) if type(exc).__name__ in ("_Unresolved", "WorkerFailure") else failure_reason(exc)
        step = int(curve[-1]["step"]) if curve else 0
        metrics = {**(dict(curve[-1]) if curve else {}), **{k: v for k, v in counts.items() if k == "workers"}}
        restarts = {k: v for k, v in static.items() if k == TRAIN_RESTARTS}
        tune.report(
            {"failed": 1, "reason": reason, "step": step, **where, **restarts,
             OUTCOME: outcome("failed", step, metrics, reason)}
        )  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if step_file is not None:
            step_file.unlink(missing_ok=True)


class _Unresolved(Exception):
    """A spec the driver could not resolve (`TrialSpec.error`): its reason is the record's as is."""


def progress_file(trial_id: str) -> Path | None:
    """Where a trial of a local Ray leaves its latest step for the driver's live line: the
    driver's scratch folder (None without one: a joined cluster, whose nodes do not share it)."""
    scratch = os.environ.get(TRIAL_TMP_ENV, "")
    if not scratch or not os.path.isdir(scratch):
        return None
    folder = Path(scratch) / PROGRESS_DIR
    folder.mkdir(exist_ok=True)
    return folder / f"{trial_id}.json"


def write_progress(path: Path, step: int, steps: int, s_per_step: float, tokens_per_step: int) -> None:
    """Replace `path` with the trial's step, its steps in all, seconds per step (since its first
    step of this session) and tokens per step (atomic: the driver never reads half a file)."""
    data = {"step": step, "steps": steps, "s_per_step": s_per_step, "tokens_per_step": tokens_per_step}
    tmp = path.with_name(f"{path.name}.tmp")
    try:
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:  # the driver emptied its scratch folder: the live line loses one update
        pass


def read_progress(trial_id: str) -> dict[str, Any] | None:
    """The latest step a running trial of this driver's local Ray left (see `progress_file`)."""
    scratch = os.environ.get(TRIAL_TMP_ENV, "")
    if not scratch:
        return None
    try:
        data = json.loads((Path(scratch) / PROGRESS_DIR / f"{trial_id}.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
