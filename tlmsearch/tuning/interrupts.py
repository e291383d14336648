"""Ctrl-C (and SIGTERM, which `ray_session` turns into SIGINT) honoured from the first instruction
of a long command to its last, not only while a Tuner fits.

Ray Tune catches SIGINT while a Tuner fits: its handler sets the fit's stop flag (the fit then
saves its state and returns early) and puts back the handler it found. But a fit that ends
without a Ctrl-C leaves Tune's handler installed, so the next Ctrl-C, between two fits (after the
noise floor's last record, before the search's Tuner), only set the stop flag of a fit that had
already returned, and the search went on to train everything. So:

- `watch()` (at the start of `search`, `resume`, a verification, a study) installs `_on_sigint`
  in the main thread: it remembers the request and raises KeyboardInterrupt, as Python's own
  handler does; a request is remembered even where something swallowed that exception;
- `fitting()` wraps every `tuner.fit()`: it refuses to start a fit once a stop was asked for, and
  after the fit it tells whether Tune caught a SIGINT during it (Tune's handler then put
  `_on_sigint` back: a fit that saw none leaves Tune's own handler, which is replaced), so a
  Ctrl-C that arrives as the fit's last trial ends (all trials recorded) still stops the command.

A host program's own SIGINT handler (a notebook's) is left alone: only Python's default handler
and Tune's stale one are replaced. Threads other than the main one never touch signals.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

_REQUESTED = threading.Event()


def _on_sigint(signum: int, frame: Any) -> None:
    _REQUESTED.set()
    raise KeyboardInterrupt


def _replaceable(handler: Any) -> bool:
    """Python's default handler, ours, or a Tune handler left behind by a finished fit."""
    if handler in (signal.default_int_handler, _on_sigint):
        return True
    return getattr(handler, "__name__", "") == "signal_interrupt_tune_run"


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def watch() -> None:
    """Start honouring Ctrl-C for a new long command: forget an earlier request and install
    `_on_sigint` (main thread only; a host program's handler stays)."""
    _REQUESTED.clear()
    if _main_thread() and _replaceable(signal.getsignal(signal.SIGINT)):
        signal.signal(signal.SIGINT, _on_sigint)


def requested() -> bool:
    """Whether a Ctrl-C (or SIGTERM) asked this command to stop."""
    return _REQUESTED.is_set()


def check() -> None:
    """KeyboardInterrupt when a stop was asked for (e.g. its exception swallowed on the way)."""
    if _REQUESTED.is_set():
        raise KeyboardInterrupt


@contextlib.contextmanager
def fitting() -> Iterator[None]:
    """Around one `tuner.fit()`: refuse to start after a stop request; afterwards put
    `_on_sigint` back in place of Tune's handler and remember a SIGINT Tune caught meanwhile."""
    main = _main_thread()
    if main and _replaceable(signal.getsignal(signal.SIGINT)):
        signal.signal(signal.SIGINT, _on_sigint)
    check()
    tune_catches = main and not int(os.getenv("TUNE_DISABLE_SIGINT_HANDLER", "0"))
    try:
        yield
    except BaseException:
        if main and _replaceable(signal.getsignal(signal.SIGINT)):
            signal.signal(signal.SIGINT, _on_sigint)
        raise
    if main:
        current = signal.getsignal(signal.SIGINT)
        if tune_catches and current is _on_sigint:  # Tune's handler ran: it put ours back
            _REQUESTED.set()
        if _replaceable(current):
            signal.signal(signal.SIGINT, _on_sigint)
