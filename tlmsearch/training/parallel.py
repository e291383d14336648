"""Data-parallel training of one run over N workers: the numbers of one worker, N times the devices.

A run trained by N workers reads, step by step, exactly the windows the single-worker trainer
reads: the step's global batch (`train_starts`: `grad_accum` x `batch_size` windows drawn from
the seed and the step) is cut into N contiguous shares of rows (`shard`), worker r reading
share r of every micro-batch. Each worker weights its loss by its share of the global batch, so
that the gradients summed over the workers (DDP's all-reduce, an average, times N) are the
gradient of the single worker's loss to rounding. Everything after the all-reduce sees the
same gradients on every worker: global-norm clipping, AdamW, the moving average of the weights
and the learning-rate schedule run identically everywhere and the weights stay equal. The
evaluation splits the fixed validation windows over the workers and sums their nats; the
inner-update clip counts of Titans and Hope-attention are summed likewise. In float64 on CPU
(gloo) 2 and 3 workers give the loss curve and final weights of 1 worker to ~1e-13
(`tests/unit/test_data_parallel.py`).

The process group is the caller's: Ray Train's `TorchTrainer` sets it up on its workers (gloo
on CPU, NCCL on GPU), a test with `torch.multiprocessing`. Worker 0 alone writes checkpoints;
every worker resumes from the same one, so a run can resume on another number of workers.
Decisions taken from a clock or a signal (a checkpoint by wall time, `stop()`) are taken by
all workers together: one asking is enough.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import torch
from torch import nn

from tlmsearch.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class DataParallel:
    """This process's place among the `world` workers of one run (`rank` 0 writes checkpoints)."""

    rank: int
    world: int

    def __post_init__(self) -> None:
        if not (isinstance(self.world, int) and self.world >= 1):
            raise ConfigError(f"workers={self.world!r} must be a whole number >= 1")
        if not (isinstance(self.rank, int) and 0 <= self.rank < self.world):
            raise ConfigError(f"rank={self.rank!r} must lie in [0, {self.world - 1}]")

    @classmethod
    def from_process_group(cls) -> DataParallel:
        """The rank and size of torch.distributed's default group (one worker without one)."""
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            return cls(rank=0, world=1)
        return cls(rank=dist.get_rank(), world=dist.get_world_size())

    @property
    def writer(self) -> bool:
        return self.rank == 0

    def rows(self, n: int) -> slice:
        """The rows of an n-row batch this worker reads."""
        return shard(n, self.rank, self.world)


def shard(n: int, rank: int, world: int) -> slice:
    """Worker `rank`'s contiguous share of n rows: shares differ in size by at most one row and
    together cover the n rows once, in order."""
    return slice(n * rank // world, n * (rank + 1) // world)


def check_batch(batch_size: int, world: int) -> None:
    """Every worker must read at least one window of each micro-batch."""
    if world > 1 and batch_size < world:
        raise ConfigError(
            f"batch_size={batch_size} is smaller than workers={world}: every data-parallel worker reads at "
            "least one window of each micro-batch; raise batch_size or use fewer workers"
        )


def wrap(model: nn.Module, device: torch.device) -> nn.Module:
    """`model` in DistributedDataParallel: gradients averaged over the workers during backward.
    Buffers are not broadcast (the inner-clip counters are each worker's own until summed)."""
    from torch.nn.parallel import DistributedDataParallel

    ids = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=ids, broadcast_buffers=False)


def no_sync(ddp: nn.Module | None, last: bool) -> contextlib.AbstractContextManager[Any]:
    """DDP's `no_sync` for a micro-batch that is not the step's last (gradients accumulate
    locally and are all-reduced once, with the last)."""
    if ddp is None or last:
        return contextlib.nullcontext()
    return ddp.no_sync()  # type: ignore[operator]


def all_sum(x: torch.Tensor) -> torch.Tensor:
    """`x` summed over the workers (in place; returned for convenience)."""
    import torch.distributed as dist

    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    return x


def sum_clip_stats(model: nn.Module) -> None:
    """Sum the inner-update clip counters (`clip_stats` buffers) over the workers, in place."""
    for module in model.modules():
        stats = getattr(module, "clip_stats", None)
        if isinstance(stats, torch.Tensor):
            all_sum(stats)
