"""Run training jobs on N data-parallel worker processes (torch.multiprocessing, gloo on CPU),
in float64, the way Ray Train's TorchTrainer runs a trial's workers: one process group, every
worker calling `train` with its rank. Used by tests/unit/test_data_parallel.py.

Each job is (name, model config dict, train config dict, wrong): worker 0 writes the run's
curve to `<out>/<name>/curve.json`; every worker writes its final weights to
`<out>/<name>/rank<r>.pt`. With `wrong`, worker 1 reads the windows one token later than its
share (the mistake the exactness check must catch).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

Job = tuple[str, dict[str, Any], dict[str, Any], bool]


def run_group(world: int, jobs: list[Job], out: Path, cache: Path, corpus: str) -> None:
    """Train `jobs` on `world` worker processes; returns when all have ended (raises if one failed)."""
    import torch.multiprocessing as mp

    out.mkdir(parents=True, exist_ok=True)
    init = out / f"rendezvous-{world}"
    init.unlink(missing_ok=True)
    mp.spawn(_worker, args=(world, jobs, str(out), str(cache), corpus, str(init)), nprocs=world, join=True)


def _worker(rank: int, world: int, jobs: list[Job], out: str, cache: str, corpus: str, init: str) -> None:
    os.environ["TLMSEARCH_CACHE"] = cache
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    import torch.distributed as dist

    import tlmsearch.training.trainer as trainer
    from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
    from tlmsearch.training.parallel import DataParallel

    trainer.matmul_peak = lambda device, dtype, cache_dir=None: 1e11  # measured by its own tests
    honest, loop = trainer.train_starts, trainer._Run.loop
    weights: dict[str, torch.Tensor] = {}

    def keep_weights(run: Any, *args: Any, **kwargs: Any) -> Any:  # this worker's own final weights
        result = loop(run, *args, **kwargs)
        weights.clear()
        weights.update({k: v.detach().clone() for k, v in run.model.state_dict().items()})
        return result

    trainer._Run.loop = keep_weights  # type: ignore[method-assign]
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=world)
    try:
        for name, model, train, wrong in jobs:
            if wrong and rank == 1:
                trainer.train_starts = lambda *a, **k: honest(*a, **k) + 1  # type: ignore[assignment]
            folder = Path(out) / name
            result = trainer.train(
                ModelConfig.from_dict(model),
                TrainConfig.from_dict(train),
                DataConfig(corpus=corpus),
                checkpoint_dir=folder,
                parallel=DataParallel(rank=rank, world=world),
            )
            trainer.train_starts = honest
            if rank == 0:
                (folder / "curve.json").write_text(json.dumps({"curve": result.curve, "metrics": result.metrics}))
            torch.save(weights, folder / f"rank{rank}.pt")
            dist.barrier()
    finally:
        dist.destroy_process_group()
