"""How long a batch of training runs will take: pure arithmetic over measured rates.

Every long command (`train`, `search`, `verify`, `compare`, `resume`, `quickstart`, `study`)
states before it spends compute what it will run and how long that should take. The time comes
from a `Rate`: wall seconds per optimizer step (evaluations included) and start-up seconds per
run, either recorded by earlier runs of the same shape on this machine (`tlmsearch.costs.rates`) or
timed just now on a few steps (`tlmsearch.costs.calibrate`). This module only does the arithmetic, so
it is tested with injected rates; nothing here reads a clock or a file.

The estimate is a range, never a point:
- the rate itself is a range (the fastest and slowest of the recorded runs; a calibration is
  one measurement, so its range is a point);
- early stopping makes the work a range: a run of `Work` has its fewest and most steps (ASHA
  may stop a sampled trial at its first rung; baselines and fixed runs always run to the end);
- runs share `slots` places and start in order, each as soon as a place is free (Ray's FIFO
  start order); each place pays a worker's start-up once (Ray reuses the worker for the next
  runs); the wall time of a list of runs is that schedule's makespan.

On a CPU the slow end is widened for a load that changes while the runs train (`load_drift`:
1 + load / cores, the 1-minute load average read when the estimate is made), for rates measured
earlier as for rates priced now. Not counted: Ray's own start (`ray.init`, seconds to tens of
seconds on a loaded machine).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass


def duration(seconds: float) -> str:
    """`47s`, `3m05s`, `2h14m`: short, for plan and progress lines."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def fit_line(line: str, width: int) -> str:
    """`line` cut to at most `width` characters, its end replaced by an ellipsis (pure): the live
    lines put their most important fields first, so a cut loses the least important."""
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"


def elapsed_text(seconds: float) -> str:
    """`1m05s`, `2h03m07s`: time spent so far, for the live lines of searches and studies."""
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


@dataclass(frozen=True)
class Rate:
    """Measured speed of one run shape: seconds per step (low..high) and start-up seconds per run."""

    s_per_step_low: float
    s_per_step_high: float
    overhead_s: float = 0.0  # model build, data, first-step warm-up: once per run
    startup_s: float = 0.0  # a place's first run starts its worker (Ray reuses it after): once per place
    source: str = ""  # where the figures come from, said in the plan line

    def __post_init__(self) -> None:
        if not 0 < self.s_per_step_low <= self.s_per_step_high:
            raise ValueError(f"rate: need 0 < low <= high, got {self.s_per_step_low}, {self.s_per_step_high}")
        if self.overhead_s < 0 or self.startup_s < 0:
            raise ValueError(f"rate: overhead_s={self.overhead_s}, startup_s={self.startup_s} must be >= 0")

    @classmethod
    def measured(cls, s_per_step: Sequence[float], overheads: Sequence[float] = (), source: str = "") -> Rate:
        """The range of several measurements; a run's overhead is their median, a place's
        start-up the largest less that median (the runs that started a worker paid it)."""
        if not s_per_step:
            raise ValueError("rate: no measurement")
        mid = sorted(overheads)[len(overheads) // 2] if overheads else 0.0
        return cls(min(s_per_step), max(s_per_step), mid, max(overheads, default=0.0) - mid, source)

    def text(self, tokens_per_step: int = 0) -> str:
        lo, hi = self.s_per_step_low, self.s_per_step_high
        span = f"{lo:.3g} s/step" if lo == hi else f"{lo:.3g}-{hi:.3g} s/step"
        if tokens_per_step:
            fast, slow = tokens_per_step / lo, tokens_per_step / hi
            span += f", {fast:,.0f} tok/s" if lo == hi else f", {slow:,.0f}-{fast:,.0f} tok/s"
        return f"{span}: {self.source}" if self.source else span


@dataclass(frozen=True)
class Work:
    """Runs in start order, each with its fewest and most steps, on `slots` places at once."""

    runs: tuple[tuple[int, int], ...]
    slots: int = 1

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ValueError(f"work: slots={self.slots} must be >= 1")
        for low, high in self.runs:
            if not 0 <= low <= high:
                raise ValueError(f"work: a run of {low}..{high} steps")

    @property
    def steps(self) -> tuple[int, int]:
        """Fewest and most optimizer steps over all runs."""
        return sum(lo for lo, _ in self.runs), sum(hi for _, hi in self.runs)


def search_work(trials: int, steps: int, *, baselines: int, first_rung: int | None, slots: int, done: int = 0) -> Work:
    """A search: the first `baselines` trials run in full; the others may stop at `first_rung`
    (None: no early stopping). `done` trials already ended (a resume) are left out, baselines first."""
    runs = []
    for i in range(done, trials):
        low = steps if i < baselines or first_rung is None else min(first_rung, steps)
        runs.append((low, steps))
    return Work(tuple(runs), slots)


def fixed_work(runs: int, steps: int, slots: int) -> Work:
    """Runs that all train `steps` steps (verify, compare, a study's transfer check)."""
    return Work(((steps, steps),) * runs, slots)


def makespan(durations: Sequence[float], slots: int, startup_s: float = 0.0) -> float:
    """Wall seconds for runs started in order, each on the first free place of `slots`; every
    place used pays `startup_s` once, before its first run."""
    if not durations:
        return 0.0
    free = [startup_s] * min(slots, len(durations))
    end = 0.0
    for d in durations:
        start = heapq.heappop(free)
        end = max(end, start + d)
        heapq.heappush(free, start + d)
    return end


@dataclass(frozen=True)
class Estimate:
    """Wall seconds from `low_s` (fewest steps, fastest rate) to `high_s` (most, slowest)."""

    low_s: float
    high_s: float
    rate: Rate

    def text(self) -> str:
        return range_text(self.low_s, self.high_s)


def estimate(work: Work, rate: Rate) -> Estimate:
    """The range of wall time `work` takes at `rate` (see the module docstring)."""
    low = makespan([rate.overhead_s + lo * rate.s_per_step_low for lo, _ in work.runs], work.slots, rate.startup_s)
    high = makespan([rate.overhead_s + hi * rate.s_per_step_high for _, hi in work.runs], work.slots, rate.startup_s)
    return Estimate(low, high, rate)


def plan_line(what: str, result: Estimate | str, tokens_per_step: int = 0) -> str:
    """`<what>; estimate 1m10s-2m05s (0.031-0.035 s/step: ...)`, or `<what>; no estimate (why)`."""
    if isinstance(result, str):
        return f"{what}; no estimate ({result})"
    return f"{what}; estimate {result.text()} ({result.rate.text(tokens_per_step)})"


def eval_share(eval_interval: int, eval_windows: int, batch_size: int, steps: int) -> float:
    """Extra wall time of the evaluations as a share of the training steps' time: every
    `eval_interval` steps (and at the last) `eval_windows` windows pass forward only, in
    micro-batches of `batch_size`, at about a third of a training step's cost each."""
    if steps < 1:
        return 0.0
    evals = steps // max(1, eval_interval) + (steps % max(1, eval_interval) != 0)
    batches = -(-eval_windows // max(1, batch_size))
    return evals * batches / 3.0 / steps


def load_slowdown(slots: int, threads: int, cores: int, load: float) -> tuple[float, float]:
    """How much slower each of `slots` runs of `threads` threads steps on `cores` CPU cores than
    one such run timed alone there, both beside `load` runnable threads of other work (the
    1-minute load average), as (low, high).

    Runnable threads beyond the cores share them, so a run steps at cores / (its threads + all
    others) of its speed alone, when that is below 1: the calibration ran at
    max(1, (load + threads) / cores) of its alone-time, the runs at
    max(1, (load + slots * threads) / cores). `low` is their ratio (the load stays as it is); the
    load average is a lagging mean that other work changes under a long run, so `high` widens it
    by load / cores (a quiet machine: low == high; another full machine's worth of work: 2x).
    """
    cores = max(1, int(cores))
    load = load if load == load and load > 0 else 0.0  # NaN or negative: no load known
    timed = max(1.0, (load + threads) / cores)
    runs = max(1.0, (load + slots * threads) / cores)
    low = runs / timed
    return low, low * load_drift(cores, load)


def load_drift(cores: int, load: float) -> float:
    """How much slower than measured a long run may step because the load changes under it:
    1 + load / cores (the widening of `load_slowdown`'s high end, and of every rate measured
    beside `load` runnable threads of other work on `cores` cores: a quiet machine 1, another
    full machine's worth of work 2). NaN or a negative load: none known, 1."""
    load = load if load == load and load > 0 else 0.0
    return 1.0 + load / max(1, int(cores))


def widened(rate: Rate, cores: int, load: float) -> Rate:
    """`rate` as measured (its spread: the fastest and slowest runs), its slow end widened by
    `load_drift` for the load there is now; the source says by how much."""
    drift = load_drift(cores, load)
    if drift <= 1.0:
        return rate
    return Rate(
        rate.s_per_step_low,
        rate.s_per_step_high * drift,
        rate.overhead_s,
        rate.startup_s,
        f"{rate.source}, up to x{drift:.2g} slower beside a load of {load:.1f} on {max(1, int(cores))} cores",
    )


def widened_pace(runs: int, per_run_s: float, drift: float, priced: Estimate | None = None) -> tuple[float, float]:
    """Wall seconds for `runs` more runs at a measured pace of `per_run_s` a run (runs in
    parallel included), as (low, high): the pace itself, up to `drift` (`load_drift`) slower,
    and never narrower than `priced` (the same runs at the recorded rates' spread)."""
    low, high = runs * per_run_s, runs * per_run_s * max(1.0, drift)
    if priced is not None:
        low, high = min(low, priced.low_s), max(high, priced.high_s)
    return low, high


def range_text(low: float, high: float) -> str:
    """`1m10s-2m05s`, or `about 47s` when the two ends round to one figure."""
    if round(low) == round(high):
        return f"about {duration(high)}"
    return f"{duration(low)}-{duration(high)}"


def estimate_text(
    runs: int,
    pilot_runs: int,
    pilot_wall_s: float,
    run_wall_s: float,
    *,
    drift: float = 1.0,
    priced: Estimate | None = None,
    load_note: str = "",
) -> str:
    """'12m00s-30m00s (...)' for `runs` more runs: a range, like every price before training.

    The pace is the pilot's measured wall time: `pilot_wall_s` for its `pilot_runs` trained runs
    together (parallelism, start-up and the load it ran beside included); when the pilot was
    fully reused (0 runs), the records' mean wall time per run (`run_wall_s`, one at a time)
    stands in. Its slow end is widened by `drift` (`costs.estimate.load_drift`: the load may
    change under a long stage, as it did under the pilot), and the range is never narrower than
    `priced` (the same runs at the spread of the recorded step rates, the pilot's among them);
    `load_note` says the load the drift was read from.
    """
    if runs == 0:
        return "nothing left to train"
    if pilot_runs > 0 and pilot_wall_s > 0:
        per = pilot_wall_s / pilot_runs
        how = f"{per:.1f} s a run as the pilot ran: {pilot_runs} runs in {_dur(pilot_wall_s)}"
    elif run_wall_s > 0:
        per = run_wall_s
        how = f"{per:.1f} s a run, the pilot records' mean training time, one at a time"
    elif priced is not None:
        return f"{priced.text()} (no timing from the pilot: at the recorded step rates)"
    else:
        return "no timing from the pilot"
    low, high = widened_pace(runs, per, drift, priced)
    if drift > 1.0:
        how += f"; up to x{drift:.2g} slower" + (f" {load_note}" if load_note else "")
    if priced is not None:
        how += f"; at the recorded step rates {priced.text()}"
    return f"{range_text(low, high)} ({how})"


def _dur(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"
