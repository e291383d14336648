"""What `tlmsearch train` shows while it runs: an estimate from the first steps, then progress.

On a terminal, one line redrawn in place (at most five times a second); otherwise (a log file,
a pipe, CI) a plain line every `interval_s` seconds and at every evaluation, so a redirected
run is never silent for long. The estimate is a calibration, not a guess: the seconds per step
measured over the first steps of this run on this machine, at this load, times the steps left.
The clock is injectable so tests can drive the timing without waiting.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from tlmsearch.costs.estimate import duration

CALIBRATION_STEPS = 5  # steps timed before the estimate (the very first one warms up and is skipped)
CALIBRATION_MIN_S = 1.0  # ... and at least this long, so tiny steps are not timed on noise


class TrainProgress:
    """Progress of one training run from step `first` to `total` (see the module docstring)."""

    def __init__(
        self,
        total: int,
        tokens_per_step: int,
        stream: TextIO | Any = sys.stderr,
        *,
        first: int = 0,
        interval_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.tokens_per_step, self.stream = total, tokens_per_step, stream
        self.first, self.step, self.interval_s, self.clock = first, first, interval_s, clock
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.start = clock()
        self.last_line = self.start
        self.last_draw = 0.0
        self.calibrated: tuple[int, float] | None = None  # (step, time) after the warm-up step
        self.estimated = False
        self.eval_text = ""

    # ------------------------------------------------------------------------- events

    def on_step(self, step: int) -> None:
        self.step = step
        now = self.clock()
        if self.calibrated is None:
            self.calibrated = (step, now)  # from here on steps are timed (the first one warms up)
        elif not self.estimated and step - self.calibrated[0] >= CALIBRATION_STEPS:
            if now - self.calibrated[1] >= CALIBRATION_MIN_S or step >= self.total:
                self._estimate(step, now)
        if self.tty:
            if now - self.last_draw > 0.2:
                self.last_draw = now
                self._draw()
        elif now - self.last_line >= self.interval_s:
            self._print(self._line(now))

    def on_eval(self, step: int, m: dict[str, float]) -> None:
        self.step = step
        self.eval_text = f"val {m['val_loss']:.4f} (ppl {m['val_ppl']:.2f}, bpb {m['val_bpb']:.3f})"
        if self.tty:
            self._draw()
        else:
            self._print(self._line(self.clock()))

    def close(self) -> None:
        if self.tty:
            self._draw()
            print(file=self.stream, flush=True)

    # ------------------------------------------------------------------------- text

    def rate(self, now: float) -> float | None:
        """Seconds per step since the warm-up step (evaluations included), or None before two steps."""
        if self.calibrated is None or self.step <= self.calibrated[0]:
            return None
        return (now - self.calibrated[1]) / (self.step - self.calibrated[0])

    def _estimate(self, step: int, now: float) -> None:
        self.estimated = True
        per_step = self.rate(now)
        assert per_step is not None and self.calibrated is not None
        left = self.total - step
        text = (
            f"estimate: {per_step:.3g} s/step over steps {self.calibrated[0] + 1}-{step} "
            f"({self.tokens_per_step / per_step:,.0f} tok/s) -> about {duration(left * per_step)} "
            f"for the {left} steps left (evaluations add a little)"
        )
        if self.tty:
            print("\r\033[K" + text, file=self.stream, flush=True)
        else:
            self._print(text)

    def _line(self, now: float) -> str:
        parts = [f"step {self.step}/{self.total}"]
        per_step = self.rate(now)
        if per_step:
            parts.append(f"{self.tokens_per_step / per_step:,.0f} tok/s")
            parts.append(f"ETA {duration((self.total - self.step) * per_step)}")
        parts += [self.eval_text, f"elapsed {duration(now - self.start)}"]
        return " | ".join(p for p in parts if p)

    def _print(self, text: str) -> None:
        self.last_line = self.clock()
        print(text, file=self.stream, flush=True)

    def _draw(self) -> None:
        print("\r\033[K" + self._line(self.clock()), end="", file=self.stream, flush=True)
