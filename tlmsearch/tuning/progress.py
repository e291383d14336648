"""A compact live view of a search in place of Ray Tune's tables: one line, rewritten in place on a
terminal (every second, fitted to its width), a plain line otherwise (every 30 s and at each
trial end), e.g.

    search tiny-knots  1m05s | 5/8 ended: 3 complete, 1 stopped, 1 failed | 2 running:
        7a3c_00005 knots step 57/120 3,412 tok/s ETA 19s; ... | best val_loss 5.4321 (7a3c_00001 cosine)

A running trial's step, speed and ETA come from the file it rewrites in the driver's scratch
folder (`trainable.write_progress`, local Ray only), else from its latest evaluation.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from ray.tune import Callback

from tlmsearch.costs.calibrate import current_load
from tlmsearch.costs.estimate import duration, elapsed_text, fit_line, load_drift
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.records import SEARCH_KINDS, TrialRecord
from tlmsearch.tuning.recorder import RecordWriter, trial_config
from tlmsearch.tuning.trainable import read_progress

PLAIN_EVERY_S = 30.0  # a plain line at least this often when the stream is not a terminal


@dataclass(frozen=True)
class Running:
    """Where one running trial is: its name, step of steps, and (when measured) its speed."""

    name: str
    step: int
    steps: int
    tokens_per_s: float | None = None
    eta_s: float | None = None

    def text(self) -> str:
        parts = [f"{self.name} step {self.step}/{self.steps}"]
        if self.tokens_per_s:
            parts.append(f"{self.tokens_per_s:,.0f} tok/s")
        if self.eta_s is not None:
            parts.append(f"ETA {duration(self.eta_s)}")
        return " ".join(parts)


def running_from(name: str, progress: dict[str, Any] | None, eval_step: int | None, max_steps: int) -> Running:
    """A running trial from the step file it wrote (`trainable.write_progress`), else from the
    step of its latest evaluation (no speed then)."""
    try:
        if progress:
            step, steps, per = int(progress["step"]), int(progress["steps"]), float(progress["s_per_step"])
            tokens = float(progress.get("tokens_per_step") or 0)
            if per > 0 and steps > 0:
                return Running(name, step, steps, tokens / per if tokens else None, max(0, steps - step) * per)
    except (KeyError, TypeError, ValueError):
        pass
    return Running(name, eval_step or 0, max_steps)


def summary_line(
    name: str,
    records: list[TrialRecord],
    total: int,
    running: int,
    elapsed: float,
    metric: str = "val_loss",
    *,
    trials: list[Running] | None = None,
    width: int | None = None,
    drift: float = 1.0,
    places: int = 0,
) -> str:
    """The progress line for these ended records (pure); `trials`: where each running trial is;
    `drift`: how much slower than measured the rest may run (`search_left`). With `width` (a
    terminal's), a line that would not fit gives the running trials as a count and the longest
    ETA instead, and is then cut to `width`."""
    counts = {s: sum(r.status == s for r in records) for s in ("complete", "stopped", "failed")}
    head = [
        f"search {name}  {elapsed_text(elapsed)}",
        f"{len(records)}/{total} ended: {counts['complete']} complete, {counts['stopped']} stopped, "
        f"{counts['failed']} failed",
    ]
    detail = "; ".join(t.text() for t in trials) if trials else ""
    running_part = f"{running} running" + (": " + detail if detail else "")
    tail = []
    full = [r for r in records if r.finished(metric)]
    if full:
        best = min(full, key=lambda r: r.metric(metric))
        tail.append(f"best {metric} {best.metric(metric):.4f} ({trial_name(best)})")
    left = search_left(records, total, trials or [], running, drift, places)
    left_part = f"{left_text(*left)} left" if left is not None else "time left unknown"
    line = " | ".join([*head, running_part, *tail, left_part])
    if width is None or len(line) <= width:
        return line
    # a terminal too narrow: the most important first (phase, done/total, best, time left), the
    # details after, cut from the right only where they still do not fit
    etas = [t.eta_s for t in trials or [] if t.eta_s is not None]
    running_part = f"{running} running" + (f", longest ETA {duration(max(etas))}" if etas else "")
    short = name if len(name) <= 20 else name[:19] + "…"
    best = [f"best {min(r.metric(metric) for r in full):.4f}"] if full else []
    first = [f"search {short}", f"{len(records)}/{total} ended", *best, left_part]
    rest = [elapsed_text(elapsed), head[1].partition(": ")[2], running_part, *tail]
    return fit_line(" | ".join([*first, *rest]), width)


def search_left(
    records: list[TrialRecord],
    total: int,
    trials: list[Running],
    running: int,
    drift: float = 1.0,
    places: int = 0,
) -> tuple[float, float] | None:
    """Seconds until the search (or batch of runs) ends, as (low, high) (pure): the longest ETA
    of the running trials (at their own measured pace), then the trials not started, in rounds of
    as many as run at once (`places`: the most seen running, so that a moment between two trials
    does not halve them; else those running now), each from the shortest to the longest wall
    time of the ended ones (their spread); the high end `drift` times slower
    (`costs.estimate.load_drift`: the load may change under what is left, as a price's slow end
    is widened). None while no wall time is known and trials wait."""
    etas = [t.eta_s for t in trials if t.eta_s is not None]
    waiting = max(0, total - len(records) - running)
    walls = [r.wall_s for r in records if r.wall_s > 0]
    if waiting and not walls:
        return None
    if not waiting and running and not etas:
        return None
    rounds = -(-waiting // max(1, running, places))
    low = max(etas, default=0.0) + rounds * min(walls, default=0.0)
    high = max(etas, default=0.0) + rounds * max(walls, default=0.0)
    return low, high * max(1.0, drift)


def left_text(low: float, high: float) -> str:
    """`43s` when the two ends say the same, else `3m10s-9m40s`."""
    return duration(high) if duration(low) == duration(high) else f"{duration(low)}-{duration(high)}"


def trial_name(record: TrialRecord) -> str:
    """The one name of a trial in every output: its id, then its baseline or profile family."""
    return name_of(record.trial_id, record.baseline, record.profile.get("family", "?"), record.kind, record.seed)


def name_of(trial_id: str, baseline: str | None, family: str, kind: str, seed: int) -> str:
    seed_text = f" seed {seed}" if kind in ("verify", "compare") else ""
    return f"{trial_id} {baseline or family}{seed_text}"


def running_name(trial_id: str, config: dict[str, Any]) -> str:
    """`trial_name` of a trial still running, from its Tune config (it has no record yet)."""
    config = trial_config(config)
    try:
        family = ProfileSpec.parse(str(config.get("profile", ""))).family
    except Exception:  # noqa: BLE001 - a name is a courtesy; the record will say what it was
        family = "?"
    return name_of(trial_id, config.get("baseline"), family, str(config.get("kind", "")), int(config.get("seed", 0)))


class ProgressView(Callback):
    """Prints `summary_line` to `stream` (stderr by default) while Tune runs."""

    def __init__(
        self,
        name: str,
        total: int,
        writer: RecordWriter,
        *,
        interval: float | None = None,
        stream: IO[str] | None = None,
        kinds: tuple[str, ...] | None = SEARCH_KINDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`kinds`: earlier records of these kinds count towards `total` (a resumed search);
        None counts only the trials of this session (a batch of fixed trials)."""
        self.name, self.total, self.writer, self.kinds = name, total, writer, kinds
        self.stream = stream
        self.interval = interval
        self.clock = clock
        self._t0 = clock()
        self._last = 0.0
        self._said: str | None = None  # the last line printed, less its name and elapsed time
        self._records: list[TrialRecord] = []
        self._steps: dict[str, int] = {}  # trial id -> latest evaluated step
        self._places = 0  # the most trials seen running at once: the places the waiting ones get
        self.max_steps = writer.cfg.train.steps

    def __getstate__(self) -> dict[str, Any]:  # Tune pickles its callbacks (never unpickled here)
        return {k: v for k, v in self.__dict__.items() if k not in ("stream", "_records", "_steps", "clock")}

    @property
    def out(self) -> IO[str]:
        return self.stream or sys.stderr

    @property
    def tty(self) -> bool:
        return bool(getattr(self.out, "isatty", lambda: False)())

    def setup(self, **info: Any) -> None:  # type: ignore[override]
        self._t0 = self.clock()
        kinds = self.kinds or ()
        self._records = [r for r in self.writer.all_records() if r.kind in kinds]

    def _print(self, trials: list, final: bool = False) -> None:
        ended = {r.trial_id for r in self._records}
        live = [t for t in trials if t.status == "RUNNING" and t.trial_id not in ended]
        self._places = max(self._places, len(live))
        where = [
            running_from(running_name(t.trial_id, t.config), read_progress(t.trial_id), self._steps.get(t.trial_id),
                         self.max_steps)
            for t in live
        ]  # fmt: skip
        width = shutil.get_terminal_size((80, 24)).columns - 1 if self.tty else None
        line = summary_line(
            self.name,
            self._records,
            self.total,
            len(live),
            self.clock() - self._t0,
            trials=where,
            width=width,
            drift=self._drift(),
            places=self._places,
        )
        news = line.partition(" | ")[2]  # what the line says, less its name and elapsed time
        if final and not self.tty and news == self._said:
            return  # a log already holds this line (the last trial's end printed it)
        if self.tty and not final:
            self.out.write("\r\033[K" + line)
        else:
            self.out.write(("\r\033[K" if self.tty else "") + line + "\n")
        self.out.flush()
        self._last, self._said = self.clock(), news

    def _drift(self) -> float:
        """`costs.estimate.load_drift` of trials on this machine's CPU now (1 for GPU trials)."""
        if getattr(self.writer.cfg, "gpu_share", 0) > 0:
            return 1.0
        from tlmsearch.training.hardware import cpu_count  # lazy: heavy (torch)

        cores = cpu_count()
        return load_drift(cores, current_load(cores))

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        interval = self.interval if self.interval is not None else (1.0 if self.tty else PLAIN_EVERY_S)
        if self.clock() - self._last >= interval:
            self._print(trials)

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        if isinstance(result.get("step"), int | float):
            self._steps[trial.trial_id] = int(result["step"])

    def _ended(self, trials: list) -> None:
        fresh = [r for r in self.writer.written if r not in self._records]
        self._records.extend(fresh)
        self._print(trials, final=not self.tty)

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._ended(trials)

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._ended(trials)

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        self._print(trials, final=True)
