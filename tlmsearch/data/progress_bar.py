"""A compact progress bar on stderr for `tlmsearch data prepare`.

    prepare  42% [########...........]  420/1,000 MB  12.3 MB/s  117M tokens  eta 47s

On a terminal it is redrawn in place (at most 5 times a second, cut to the terminal's width);
in a log it is a plain line at every tenth of the way. Nothing is shown in the first second
(a small corpus shows only its last line, and an error in its first lines only the error). `bar_line` is pure (tested).
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO

_QUIET_START = 1.0  # seconds before the first line: a small corpus shows only its last one


def _amount(n: float, unit: str, total: int) -> str:
    if unit == "B":
        return f"{n / 1e6:,.1f}" if total < 100e6 else f"{n / 1e6:,.0f}"
    return f"{n:,.0f}"


def _count(n: int) -> str:
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.3g}{suffix}"
    return str(n)


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def bar_line(done: float, total: int, unit: str, tokens: int, elapsed: float, *, width: int = 20) -> str:
    """One line: the share done, a bar, the amount read of the total, the rate, the tokens
    written and the time left (from the rate so far)."""
    share = min(max(done, 0.0), 1.0)
    filled = int(round(share * width))
    read = share * total
    unit_name = "MB" if unit == "B" else "rows"
    rate = read / elapsed if elapsed > 0 else 0.0
    rate_text = f"{rate / 1e6:.1f} MB/s" if unit == "B" else f"{rate:,.0f} rows/s"
    left = (total - read) / rate if rate > 0 else None
    eta = f"eta {_duration(left)}" if left is not None and share < 1 else f"{_duration(elapsed)}"
    return (
        f"prepare {share:4.0%} [{'#' * filled}{'.' * (width - filled)}]  "
        f"{_amount(read, unit, total)}/{_amount(total, unit, total)} {unit_name}  "
        f"{rate_text}  {_count(tokens)} tokens  {eta}"
    )


class ProgressBar:
    def __init__(self, total: int, unit: str, stream: TextIO | None = None) -> None:
        self.total, self.unit = total, unit
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self._last_draw = 0.0
        self._last_tenth = -1
        self._open = False

    def update(self, done: float, tokens: int, *, final: bool = False) -> None:
        now = time.perf_counter()
        if not final and now - self.start < _QUIET_START:  # a small corpus: only the last line
            return
        if self.tty:
            if not final and now - self._last_draw < 0.2:
                return
            width = shutil.get_terminal_size((100, 20)).columns - 1
            line = bar_line(done, self.total, self.unit, tokens, now - self.start)[:width]
            self.stream.write("\r" + line.ljust(width) + ("\n" if final else ""))
        else:
            tenth = int(min(max(done, 0.0), 1.0) * 10)
            if tenth == self._last_tenth:
                return
            self._last_tenth = tenth
            self.stream.write(bar_line(done, self.total, self.unit, tokens, now - self.start) + "\n")
        self._last_draw = now
        self._open = self.tty and not final
        self.stream.flush()

    def close(self) -> None:
        """End a line redrawn in place (before an error or an interruption is printed)."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False
