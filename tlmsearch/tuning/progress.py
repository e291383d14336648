"""A compact live view of a search in place of Ray Tune's tables.

One line, rewritten in place on a terminal (printed every `interval` seconds and at each
trial end otherwise):

    search tiny-knots  1m05s | 5/8 ended: 3 complete, 1 stopped, 1 failed | 2 running
        | best val_loss 5.4321 (cosine:start=1.5,end=0.5)      (all on one line)
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from ray.tune import Callback

from tlmsearch.rundir.records import SEARCH_KINDS, TrialRecord
from tlmsearch.tuning.recorder import RecordWriter

# switched by search()/resume(): a resumed search keeps the callbacks Ray pickled with it
ENABLED = True


def fmt_elapsed(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def summary_line(
    name: str, records: list[TrialRecord], total: int, running: int, elapsed: float, metric: str = "val_loss"
) -> str:
    """The progress line for these ended records (pure, tested)."""
    counts = {s: sum(r.status == s for r in records) for s in ("complete", "stopped", "failed")}
    parts = [
        f"search {name}  {fmt_elapsed(elapsed)}",
        f"{len(records)}/{total} ended: {counts['complete']} complete, {counts['stopped']} stopped, "
        f"{counts['failed']} failed",
        f"{running} running",
    ]
    full = [r for r in records if r.finished(metric)]
    if full:
        best = min(full, key=lambda r: r.metric(metric))
        parts.append(f"best {metric} {best.metric(metric):.4f} ({best.baseline or _short(best)})")
    return " | ".join(parts)


def _short(record: TrialRecord) -> str:
    family = record.profile.get("family", "?")
    return f"#{record.number} {family}" if record.number >= 0 else f"{family} seed {record.seed}"


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
    ) -> None:
        """`kinds`: earlier records of these kinds count towards `total` (a resumed search);
        None counts only the trials of this session (a batch of fixed trials)."""
        self.name, self.total, self.writer, self.kinds = name, total, writer, kinds
        self.stream = stream
        self.interval = interval
        self._t0 = time.time()
        self._last = 0.0
        self._records: list[TrialRecord] = []

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("stream", "_records")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, stream=None, _records=[], _t0=time.time())

    @property
    def out(self) -> IO[str]:
        return self.stream or sys.stderr

    @property
    def tty(self) -> bool:
        return bool(getattr(self.out, "isatty", lambda: False)())

    def setup(self, **info: Any) -> None:  # type: ignore[override]
        self._t0 = time.time()
        kinds = self.kinds or ()
        self._records = [r for r in self.writer.all_records() if r.kind in kinds]

    def _print(self, trials: list, final: bool = False) -> None:
        if not ENABLED:
            return
        running = sum(t.status == "RUNNING" for t in trials)
        line = summary_line(self.name, self._records, self.total, running, time.time() - self._t0)
        if self.tty and not final:
            self.out.write("\r\033[K" + line)
        else:
            self.out.write(("\r\033[K" if self.tty else "") + line + "\n")
        self.out.flush()
        self._last = time.time()

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        interval = self.interval if self.interval is not None else (1.0 if self.tty else 30.0)
        if time.time() - self._last >= interval:
            self._print(trials)

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
