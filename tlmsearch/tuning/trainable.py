"""The function Ray Tune runs in each trial: one real training run of one width profile.

The trial's Tune config holds `profile` (a ProfileSpec text) and optionally `base_width`
(budget sweeps), `seed`, `baseline`, `number` and `kind`; the search config arrives through
`tune.with_parameters`. Every evaluation of `tlmsearch.train` is forwarded to
`ray.tune.report` (flat metrics for the scheduler and the searcher, plus the curve so far)
together with the trainer's checkpoint whenever it wrote a new one (every evaluation by
default; `train.checkpoint_interval` spaces them out for big models), so an interrupted trial
resumes from its last checkpoint.

Every report also carries `trained`: the exact `ModelConfig` (after the tokenizer set its
vocabulary), `TrainConfig`, `DataConfig` and budget of the trial, resolved once here by
`tlmsearch.resolve.trial_shape`; the driver stores them in the trial record, so nothing
downstream re-derives what a trial trained.

A trial whose training raises (divergence, a bad shape, anything) reports `failed=1` and the
reason and then ends normally: the search goes on, the driver records the failure, and Ray's
retries (`max_failures`) stay reserved for infrastructure failures (a dead worker).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import traceback
from pathlib import Path
from typing import Any

from tlmsearch.config import TrainConfig
from tlmsearch.models import count_params
from tlmsearch.profiles import ProfileSpec
from tlmsearch.resolve import trial_shape
from tlmsearch.search_config import OBJECTIVE_METRICS, SearchConfig

CURVE_FILE = "curve.json"
TRIAL_TMP_ENV = "TLMSEARCH_TRIAL_TMP"  # the driver's scratch folder for trial folders (see tuning.runner)


def trial_train_config(cfg: SearchConfig, seed: int) -> TrainConfig:
    """The TrainConfig of one trial: threads = CPUs per trial unless set; CUDA with bf16 for GPU trials."""
    threads = cfg.train.threads or max(1, int(cfg.cpus_per_trial))
    changes: dict[str, Any] = {"seed": seed, "threads": threads}
    if cfg.gpus_per_trial > 0:
        changes.update(device="cuda", dtype="bfloat16")
    return cfg.train.replace(**changes)


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


def _mtime(path: Path) -> int:
    return path.stat().st_mtime_ns if path.exists() else 0


def _placement(device: str) -> dict[str, Any]:
    """The Ray node this trial runs on and the devices it was given (recorded per trial).

    Ray sets CUDA_VISIBLE_DEVICES to the GPUs it assigned, so torch's device i is Ray's GPU
    `ids[i]`; the device name is added where CUDA is really there.
    """
    import ray

    ctx = ray.get_runtime_context()
    ids = [str(i) for i in ctx.get_accelerator_ids().get("GPU", [])]
    devices = [f"GPU {i}" for i in ids]
    if ids and device == "cuda":
        try:
            import torch

            if torch.cuda.is_available():
                devices = [f"GPU {i} ({torch.cuda.get_device_name(k)})" for k, i in enumerate(ids)]
        except Exception:  # noqa: BLE001 - the name is a courtesy; the ids are what matter
            pass
    return {"node": ctx.get_node_id(), "devices": devices or ["cpu"]}


def run_trial(config: dict[str, Any], search: dict[str, Any]) -> None:
    """Ray Tune function trainable (bind `search` with `tune.with_parameters`)."""
    import torch
    from ray import tune

    from tlmsearch.trainer import CHECKPOINT_FILE, resolve_vocab, train

    cfg = SearchConfig.from_dict(search)
    config = config["item"] if "item" in config else config  # run_fixed's grid search
    train_cfg = trial_train_config(cfg, int(config.get("seed", cfg.seed)))
    torch.set_num_threads(train_cfg.threads)
    scratch = os.environ.get(TRIAL_TMP_ENV, "")
    work = Path(tempfile.mkdtemp(prefix="tlmsearch-trial-", dir=scratch if os.path.isdir(scratch) else None))
    curve: list[dict[str, float]] = []
    restored = tune.get_checkpoint()
    if restored is not None:
        with restored.as_directory() as d:
            shutil.copytree(d, work, dirs_exist_ok=True)
        curve = restored_curve(work, CHECKPOINT_FILE)
    static: dict[str, Any] = dict(_placement(train_cfg.device))
    trained: dict[str, Any] = {}  # what this trial trains, exactly (see the module docstring)
    saved = [_mtime(work / CHECKPOINT_FILE)]

    def report(step: int, metrics: dict[str, float]) -> None:
        curve.append(dict(metrics))
        flat = {**static, **metrics, "step": int(step), "curve": list(curve), "trained": trained}
        for key, source in OBJECTIVE_METRICS.items():
            if source in flat:
                flat[key] = flat[source]
        checkpoint = None
        if _mtime(work / CHECKPOINT_FILE) != saved[0]:  # the trainer wrote a new one (train.checkpoint_interval)
            saved[0] = _mtime(work / CHECKPOINT_FILE)
            (work / CURVE_FILE).write_text(json.dumps(curve))  # the curve up to the checkpoint's step
            checkpoint = tune.Checkpoint.from_directory(str(work))
        tune.report(flat, checkpoint=checkpoint)

    try:
        spec = ProfileSpec.parse(config["profile"])
        budget, _, model_cfg = trial_shape(cfg, spec, config.get("base_width"))
        model_cfg = resolve_vocab(model_cfg, cfg.data)
        trained.update(
            model=model_cfg.to_dict(), train=train_cfg.to_dict(), data=cfg.data.to_dict(), budget=budget.to_dict()
        )
        counts = count_params(model_cfg)
        static.update(
            params_total=float(counts.total),
            params_non_embedding=float(counts.non_embedding),
            params_mlp=float(counts.mlp),
        )
        train(model_cfg, train_cfg, cfg.data, report=report, checkpoint_dir=work)
    except Exception as exc:  # recorded as failed; the search goes on
        reason = f"{type(exc).__name__}: {exc}"
        last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        where = f" ({Path(last[0].filename).name}:{last[0].lineno})" if last else ""
        tune.report(
            {
                "failed": 1,
                "reason": reason + where,
                "step": int(curve[-1]["step"]) if curve else 0,
                "curve": list(curve),
                "trained": trained,
                **_placement(train_cfg.device),
            }
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
