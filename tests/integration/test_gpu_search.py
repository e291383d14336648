"""A real fractional-GPU search: four trials share one GPU (0.25 each), on CUDA in bf16.

Needs CUDA (marked `gpu`: skipped on CPU-only machines). Each record must say which GPU the
trial ran on (Ray's id and the device name), that Ray reserved a quarter of it, and that the
trial trained on CUDA. The search starts a local Ray of its own (with this machine's GPUs) and
shuts it down, so the shared 2-CPU session of the other integration tests is not disturbed.
The second test runs the same kind of search through the CLI in a subprocess (its own Ray) with
0.5 GPU a trial and checks that two trials really ran at once on the one device.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


def test_four_trials_share_one_gpu(tmp_path: Path) -> None:
    import ray

    import tlmsearch
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.tuning import SearchConfig

    if ray.is_initialized():  # the shared CPU session: this search needs a Ray that sees the GPUs
        ray.shutdown()
    cfg = SearchConfig(
        name="gpu", runs_dir=str(tmp_path), preset="tiny", sampler="random", scheduler="none", space="knots",
        trials=4, noise_seeds=0, cpus_per_trial=1, gpus_per_trial=0.25, max_concurrent=4,
        train=TrainConfig(steps=60, eval_interval=20, eval_windows=4), data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    try:
        study = tlmsearch.search(cfg, progress=False)
    finally:
        ray.shutdown()
    records = study.records
    assert len(records) == 4 and len({r.trial_id for r in records}) == 4
    assert all(r.status == "complete" and r.full_fidelity for r in records), [(r.status, r.reason) for r in records]
    for r in records:
        assert r.resources == {"CPU": 1.0, "GPU": 0.25}, r.resources
        assert len(r.devices) == 1 and r.devices[0].startswith("GPU ") and "(" in r.devices[0], r.devices
        assert r.train["device"] == "cuda" and r.train["dtype"] == "bfloat16", r.train
        assert r.node


def test_fractional_gpu_trials_share_one_device(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "tlmsearch", "search", "--preset", "tiny", "--corpus", "pydoc",
           "--steps", "30", "--eval-interval", "10", "--trials", "4", "--noise-seeds", "0", "--no-baselines",
           "--scheduler", "none",
           "--gpus-per-trial", "0.5", "--dtype", "bfloat16", "--runs-dir", str(tmp_path), "--name", "gpu",
           "--quiet"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in (tmp_path / "gpu" / "trials.jsonl").read_text().splitlines()]
    assert len(records) == 4
    assert all(r["status"] == "complete" for r in records)
    for r in records:
        assert r["devices"] and all(d.startswith("GPU ") for d in r["devices"]), r["devices"]
        assert r["metrics"]["val_loss"] == r["metrics"]["val_loss"]  # finite, not NaN
    spans = sorted(
        (dt.datetime.fromisoformat(r["started_at"]), dt.datetime.fromisoformat(r["ended_at"])) for r in records
    )
    overlapping = any(spans[i + 1][0] < spans[i][1] for i in range(len(spans) - 1))
    assert overlapping, f"0.5 GPU per trial should run two trials at once on one GPU: {spans}"
