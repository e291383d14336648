"""A run's price before anything trains: seconds per step from recorded rates or from FLOPs.

Every long command states what it will cost before it spends compute, within seconds and without
training a step to find out. The rate of a run shape comes, in this order, from:

1. the rates earlier runs of exactly this shape recorded on this machine
   (`tlmsearch.costs.rates`: the fastest and slowest of the newest ones);
2. a model of FLOPs: a step's analytic FLOPs (`tlmsearch.models.counts`, forward + backward,
   plus the evaluations' share) over this machine's measured matmul peak (cached on disk by
   `training.hardware.matmul_peak`; measured once, in about a second) times the share of that
   peak a training step of the architecture sustains, plus a fixed cost per step that FLOPs
   do not see (launches, the optimizer's per-tensor work, Python).

The CPU table (`CPU_STEPS`) was measured on this project's machine: one thread, float32, batch
16, the uniform profile of each architecture at the presets tiny, cpu-xs and cpu-s, 3 steps
timed after a warm-up step (bench/README.md, "Prices before training"). A tiny step is nearly
all fixed cost; at cpu-xs and cpu-s the rest of a step runs at a share of the matmul peak that
grows with the model (Transformer 40 % -> 48 %, Titans 14 % -> 35 %). A shape between two
measured ones is priced at both shares: that is the range, and it is a point at a measured
shape (`cpu_step_model`). The figures scale with this machine's own measured peak. On a GPU the
share is the MFU range `GPU_MFU` of the dense BF16 peak (or of the measured matmul peak when the
GPU is not in `costs.plan.GPUS`), with the 10 ms a step the one H200 measurement gives as the
floor (`costs.plan.STEP_FLOOR_MS`).

A price beyond `LIMIT_HOURS` of this machine is refused unless confirmed (`check_price`): one
line that says the price, the limit, and how to shrink the run or confirm it.
"""

from __future__ import annotations

from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.costs.estimate import Rate, duration, eval_share
from tlmsearch.costs.plan import GPUS, STEP_FLOOR_MS
from tlmsearch.errors import UserError
from tlmsearch.models.counts import flops_per_token

REFERENCE_PEAK = 90.6e9  # FLOP/s: the one-thread float32 matmul peak of the machine that measured the table
# one-thread CPU training steps measured on that machine (batch 16, float32, evaluations apart):
# arch -> (seconds a tiny-preset step takes: the cost FLOPs do not see,
#          ((training FLOPs of a step, seconds of a step) at cpu-xs and cpu-s))
CPU_STEPS: dict[str, tuple[float, tuple[tuple[float, float], ...]]] = {
    "transformer": (0.008, ((5.34e9, 0.157), (5.32e10, 1.235))),
    "gated_attention": (0.007, ((5.64e9, 0.249), (5.64e10, 1.797))),
    "titans": (0.025, ((7.32e9, 0.617), (7.30e10, 2.362))),
    "hope_attention": (0.013, ((8.71e9, 0.469), (8.87e10, 1.990))),
}
GPU_MFU = (0.2, 0.4)  # share of a GPU's dense BF16 peak a trial sustains
LIMIT_HOURS = 12.0  # a run priced beyond this many hours of this machine needs confirming


def cpu_step_model(arch: str, step_flops: float) -> tuple[float, tuple[float, float]]:
    """(the fixed seconds of a step, (low, high) share of the reference peak its FLOPs run at) for
    a CPU step of `step_flops` training FLOPs of `arch` (pure).

    The share of each measured shape is its FLOPs over the reference peak times the step's
    seconds less the fixed cost. A step between two measured shapes runs at a share between
    theirs (the share grows with the model): the range is theirs. Below the smallest measured
    shape, or above the largest, the range is that shape's share alone. An architecture not in
    the table takes the whole range of every measured share."""
    if arch not in CPU_STEPS:
        shares = [s for a in CPU_STEPS for s in _shares(a)]
        return max(f for f, _ in CPU_STEPS.values()), (min(shares), max(shares))
    fixed, points = CPU_STEPS[arch]
    shares = _shares(arch)
    below = [s for (f, _), s in zip(points, shares, strict=True) if f <= step_flops]
    above = [s for (f, _), s in zip(points, shares, strict=True) if f >= step_flops]
    pair = (below[-1] if below else above[0], above[0] if above else below[-1])
    return fixed, (min(pair), max(pair))


def _shares(arch: str) -> list[float]:
    fixed, points = CPU_STEPS[arch]
    return [f / (REFERENCE_PEAK * (s - fixed)) for f, s in points]


def flops_per_step(model: ModelConfig, train: TrainConfig) -> float:
    """Analytic training FLOPs of one optimizer step, the evaluations' share included."""
    tokens = train.batch_size * train.grad_accum * model.seq_len
    share = eval_share(train.eval_interval, train.eval_windows, train.batch_size, train.steps)
    return tokens * flops_per_token(model) * (1.0 + share)


def model_rate(step_flops: float, peak: float, share: tuple[float, float], floor_s: float, where: str) -> Rate:
    """The rate of a step of `step_flops` at `share` (low, high) of `peak` FLOP/s, plus `floor_s` (pure)."""
    lo, hi = share
    fast, slow = floor_s + step_flops / (peak * hi), floor_s + step_flops / (peak * lo)
    share = f"{lo:.0%}" if f"{lo:.0%}" == f"{hi:.0%}" else f"{lo:.0%}-{hi:.0%}"
    return Rate(fast, slow, 0.0, 0.0, f"FLOPs at {share} of {where}, +{floor_s * 1000:.0f} ms a step")


def flop_rate(model: ModelConfig, train: TrainConfig, data: DataConfig, device: str) -> Rate:
    """The FLOP model's rate of a step of (`model`, `train`) on `device` ("cpu" or "cuda") here."""
    from tlmsearch.training.hardware import matmul_peak, resolve_device, thread_count  # lazy: heavy (torch)

    step = flops_per_step(model, train)
    if device == "cuda":
        name = _gpu_name()
        known = [g for g in GPUS.values() if _same_gpu(g.name, name)]
        cache = data.cache_path()
        peak = known[0].bf16_dense_flops if known else matmul_peak(resolve_device("cuda"), "bfloat16", cache)
        where = f"the {name} dense BF16 peak" if known else f"the measured {name} matmul peak"
        return model_rate(step, peak, GPU_MFU, STEP_FLOOR_MS / 1000.0, where)
    with thread_count(train.threads):
        peak = matmul_peak(resolve_device("cpu"), train.dtype, data.cache_path())
    threads = train.threads or 1
    fixed, share = cpu_step_model(model.arch, step)
    where = f"this CPU's measured matmul peak ({peak / 1e9:.0f} GFLOP/s at {threads} thread{'s' * (threads > 1)})"
    return model_rate(step, peak, share, fixed, where)


def _gpu_name() -> str:
    import torch

    return str(torch.cuda.get_device_name(0))


def _same_gpu(table_name: str, torch_name: str) -> bool:
    """Whether torch's device name names the table's GPU (e.g. 'NVIDIA H200' for the H200 SXM)."""
    words = torch_name.replace("NVIDIA", "").split()
    return bool(words) and words[0] in table_name and ("PCIe" in table_name) == ("PCIe" in torch_name)


def price_line(low_s: float, high_s: float) -> str:
    return f"about {duration(high_s)}" if round(low_s) == round(high_s) else f"{duration(low_s)}-{duration(high_s)}"


def _long(seconds: float) -> str:
    """`57h18m`, `2,586 h (108 days)`."""
    hours = seconds / 3600
    return duration(seconds) if hours < 100 else f"{hours:,.0f} h ({hours / 24:,.0f} days)"


def check_price(what: str, high_s: float, *, yes: bool, limit_hours: float = LIMIT_HOURS, shrink: str = "") -> None:
    """Refuse `what` priced at up to `high_s` seconds beyond `limit_hours` unless `yes` (one line)."""
    if yes or limit_hours <= 0 or high_s <= limit_hours * 3600:
        return
    how = f"shrink it ({shrink}) or" if shrink else "shrink it or"
    raise UserError(
        f"{what} is priced at up to {_long(high_s)} on this machine, beyond the {limit_hours:g} h limit; "
        f"{how} confirm with --yes (Python: yes=True; the limit: --max-hours)"
    )
