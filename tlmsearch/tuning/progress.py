"""A compact live view of a search in place of Ray Tune's tables.

One line, rewritten in place on a terminal (printed every `interval` seconds and at each
trial end otherwise):

    search tiny-knots  1m05s | 5/8 ended: 3 complete, 1 stopped, 1 failed
        | 2 running, at steps 20 and 40 of 60 | best val_loss 5.4321 (7a3c_00001 cosine:start=1.5,end=0.5)

(all on one line). Trials are named as `tlmsearch status` and trials.jsonl name them: by trial
id, followed by the baseline or the profile family. The steps of running trials are those of
their latest evaluation (what Tune already hands the driver; nothing extra is reported).
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
    name: str,
    records: list[TrialRecord],
    total: int,
    running: int,
    elapsed: float,
    metric: str = "val_loss",
    *,
    steps: list[int] | None = None,
    max_steps: int = 0,
) -> str:
    """The progress line for these ended records (pure, tested); `steps`: the latest evaluated
    step of each running trial (of `max_steps`)."""
    counts = {s: sum(r.status == s for r in records) for s in ("complete", "stopped", "failed")}
    parts = [
        f"search {name}  {fmt_elapsed(elapsed)}",
        f"{len(records)}/{total} ended: {counts['complete']} complete, {counts['stopped']} stopped, "
        f"{counts['failed']} failed",
        f"{running} running" + _at_steps(steps, max_steps),
    ]
    full = [r for r in records if r.finished(metric)]
    if full:
        best = min(full, key=lambda r: r.metric(metric))
        parts.append(f"best {metric} {best.metric(metric):.4f} ({trial_name(best)})")
    return " | ".join(parts)


def trial_name(record: TrialRecord) -> str:
    """The one name of a trial in every output: its id, then its baseline or profile family."""
    what = record.baseline or record.profile.get("family", "?")
    seed = f" seed {record.seed}" if record.kind in ("verify", "compare") else ""
    return f"{record.trial_id} {what}{seed}"


def _at_steps(steps: list[int] | None, max_steps: int) -> str:
    if not steps:
        return ""
    shown = sorted(steps)
    text = ", ".join(str(s) for s in shown[:-1]) + (" and " if len(shown) > 1 else "") + str(shown[-1])
    return f", at step{'s' * (len(shown) > 1)} {text}" + (f" of {max_steps}" if max_steps else "")


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
        self._steps: dict[str, int] = {}  # trial id -> latest evaluated step
        self.max_steps = int(writer.cfg.train.steps) if hasattr(writer, "cfg") else 0

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("stream", "_records", "_steps")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, stream=None, _records=[], _t0=time.time(), _steps={})

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
        live = [t for t in trials if t.status == "RUNNING"]
        steps = [self._steps[t.trial_id] for t in live if t.trial_id in self._steps]
        line = summary_line(
            self.name, self._records, self.total, len(live), time.time() - self._t0,
            steps=steps, max_steps=getattr(self, "max_steps", 0),
        )  # fmt: skip
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
