"""The rate half of the estimates: a rate from earlier runs, else a price from FLOPs (or a few steps timed now).

`rate_or_reason` answers the question every long command asks before it starts: how many
seconds does a step of this run shape take here? First from the rates recorded by earlier runs
of the same shape on this machine (`tlmsearch.costs.rates`); otherwise from the step's FLOPs
(`tlmsearch.costs.price.flop_rate`: nothing trains, so every command states its price within
seconds). With `time_now` it trains a few steps of the model in this process instead
(`calibrate`, about a second at small shapes, capped at `MAX_SECONDS`), the first step untimed
(it warms up); a step that the analytic FLOPs and this machine's measured matmul peak say is
long on a CPU is then not timed at all: the answer is a reason instead of a rate ("no estimate").

A price, like a calibration, is of a run alone; trials run `slots` at once, beside whatever else the machine runs. On
a CPU, runs that together ask for more threads than there are cores share them, and so does
other work: the timed rate is scaled by `estimate.load_slowdown` from the 1-minute load average
read before the timing (`current_load`), into a range that widens with that load (the plan line
says the factor, the runs and the load). Recorded rates are used as they were measured (their
spread: the fastest and slowest of the newest runs), their slow end widened for the load now
(`estimate.widened`: x(1 + load / cores), the same widening as a timed or priced rate's).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.costs.estimate import Rate, eval_share, load_slowdown, widened
from tlmsearch.costs.price import flop_rate
from tlmsearch.costs.rates import rate_for, rate_key, rate_shape
from tlmsearch.models.counts import flops_per_token

STEPS = 6  # timed after the warm-up step, at most
MAX_SECONDS = 3.0  # the calibration stops after this long, with what it timed
MAX_STEP_S = 2.0  # a CPU step predicted longer than this is not timed ("no estimate")
CPU_SHARE_OF_PEAK = 0.3  # share of the measured matmul peak a CPU training step reaches, at best
_TIMED: dict[str, Rate] = {}  # calibrations of this process, by rate key


def device_of(train: TrainConfig) -> str:
    """ "cpu" or "cuda": where a run of `train` trains on this machine."""
    from tlmsearch.training.hardware import resolve_device  # lazy: heavy (torch)

    return resolve_device(train.device).type


def predicted_step_s(model: ModelConfig, train: TrainConfig, data: DataConfig) -> float:
    """A step's seconds from its analytic FLOPs at `CPU_SHARE_OF_PEAK` of the measured peak."""
    from tlmsearch.training.hardware import matmul_peak, resolve_device, thread_count  # lazy: heavy (torch)

    tokens = train.batch_size * train.grad_accum * model.seq_len
    with thread_count(train.threads):
        peak = matmul_peak(resolve_device("cpu"), train.dtype, data.cache_path())
    return tokens * flops_per_token(model) / (peak * CPU_SHARE_OF_PEAK)


def calibrate(
    model: ModelConfig, train: TrainConfig, data: DataConfig, clock: Callable[[], float] = time.perf_counter
) -> Rate:
    """Train up to 1 + `STEPS` steps of `model` here and time them (see the module docstring)."""
    from tlmsearch.training.trainer import TrainingInterrupted  # lazy: heavy (numpy, torch)
    from tlmsearch.training.trainer import train as run_training  # lazy: heavy (numpy, torch)

    steps = 1 + STEPS
    short = replace(train, steps=steps, warmup_steps=0, eval_interval=steps, eval_windows=1, checkpoint_interval=0)
    marks: list[tuple[int, float]] = []
    start = clock()

    def on_step(step: int) -> None:
        marks.append((step, clock()))

    def stop() -> bool:
        return len(marks) >= 3 and marks[-1][1] - marks[0][1] >= MAX_SECONDS

    try:
        run_training(model, short, data, progress=on_step, stop=stop)
    except TrainingInterrupted:
        pass
    (first, t_first), (last, t_last) = marks[0], marks[-1]
    per_step = (t_last - t_first) / max(1, last - first)
    per_step *= 1.0 + eval_share(train.eval_interval, train.eval_windows, train.batch_size, train.steps)
    overhead = max(0.0, t_first - start - per_step)
    return Rate(per_step, per_step, overhead, 0.0, f"timed now on {last - first} steps")


def current_load(cores: int) -> float:
    """Runnable threads of other work on this process's `cores` now: the 1-minute load average,
    the share of it on those cores when the process may use only some of the machine's; 0 where
    the system does not say."""
    import os

    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not a Unix
        return 0.0
    return load * min(1.0, cores / (os.cpu_count() or cores))


def rate_or_reason(
    model: ModelConfig,
    train: TrainConfig,
    data: DataConfig,
    *,
    slots: int = 1,
    cores: int = 0,
    load: float | None = None,
    time_now: bool = False,
) -> Rate | str:
    """The rate of a run of (`model`, `train`) here, or why there is none (see the module
    docstring); `slots` runs at once on `cores` cores (0: this machine's) beside `load` runnable
    threads of other work (None: `current_load`). Without a recorded rate it is priced from its
    FLOPs (`costs.price.flop_rate`: no training); `time_now` times a few steps instead."""
    from tlmsearch.training.hardware import cpu_count  # lazy: heavy (torch)
    from tlmsearch.training.trainer import resolve_vocab  # lazy: heavy (numpy, torch)

    model = resolve_vocab(model, data)
    device = device_of(train)
    shape = rate_shape(model.to_dict(), train.to_dict(), device)
    recorded = rate_for(data.cache_path(), shape)
    if recorded is not None and device != "cpu":
        return recorded
    if recorded is not None:  # measured beside the load of its time: the load may change under these runs
        cores = cores or cpu_count()
        return widened(recorded, cores, current_load(cores) if load is None else load)
    key = rate_key(shape)
    if time_now and device == "cpu":
        predicted = predicted_step_s(model, train, data)
        if predicted > MAX_STEP_S:
            return (
                f"no recorded rate for this shape, and a step would take about {predicted:.0f} s or more "
                "on this CPU, too long to time here first"
            )
    cores = cores or cpu_count()
    if load is None:
        load = current_load(cores) if device == "cpu" else 0.0
    if time_now:
        rate = _TIMED.get(key) or calibrate(model, train, data)
        _TIMED[key] = rate  # a command that plans twice (the quickstart, then its search) times once
    else:
        rate = flop_rate(model, train, data, device)
    if device != "cpu":
        return rate
    threads = train.threads or cpu_count()
    low, high = load_slowdown(slots, threads, cores, load)
    if not time_now:  # the model's figures are of a run alone, not timed beside `load`
        alone = max(1.0, (load + threads) / cores)
        low, high = low * alone, high * alone
    if high > 1.0:
        factor = f"x{low:.2g}" if high == low else f"x{low:.2g}-{high:.2g}"
        beside = f" beside a load of {load:.1f}" if load > 0 else ""
        rate = Rate(
            rate.s_per_step_low * low,
            rate.s_per_step_high * high,
            rate.overhead_s,
            rate.startup_s,
            f"{rate.source}, {factor} for {slots} run{'s' * (slots != 1)} of {threads} "
            f"thread{'s' * (threads > 1)} on {cores} cores{beside}",
        )
    return rate
