"""A real search on CUDA with fractional GPUs per trial (skipped without CUDA).

Runs the CLI in a subprocess so that its own local Ray detects the GPU (the shared test Ray
declares none). Four trials at 0.5 GPU each: Ray must place two at a time on the one device,
each trial must record the GPU it was given, and bf16 autocast must train to a finite loss.
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


def test_fractional_gpu_trials_share_one_device(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "tlmsearch", "search", "--preset", "tiny", "--corpus", "pydoc",
           "--steps", "30", "--eval-interval", "10", "--trials", "4", "--no-baselines", "--scheduler", "none",
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
