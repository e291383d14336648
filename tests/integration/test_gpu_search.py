"""A real fractional-GPU search: four trials share one GPU (0.25 each), on CUDA in bf16.

Needs CUDA (marked `gpu`: skipped on CPU-only machines). Each record must say which GPU the
trial ran on (Ray's id and the device name), that Ray reserved a quarter of it, and that the
trial trained on CUDA. The search starts a local Ray of its own (with this machine's GPUs) and
shuts it down, so the shared 2-CPU session of the other integration tests is not disturbed.
"""

from __future__ import annotations

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
    from tlmsearch.config import DataConfig, TrainConfig
    from tlmsearch.tuning import SearchConfig

    if ray.is_initialized():  # the shared CPU session: this search needs a Ray that sees the GPUs
        ray.shutdown()
    cfg = SearchConfig(
        name="gpu", runs_dir=str(tmp_path), preset="tiny", sampler="random", scheduler="none", space="knots",
        trials=4, cpus_per_trial=1, gpus_per_trial=0.25, max_concurrent=4,
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
