"""Ctrl-C (and SIGTERM, which `ray_session` turns into SIGINT) honoured from the first instruction
of a long command to its last, not only while a Tuner fits.

Tune's SIGINT handler sets the stop flag of the running fit, but a fit that ends without a
Ctrl-C leaves it installed, so a Ctrl-C between two fits (after the noise floor, before the
search) stopped nothing. So `watch()` (at the start of `search`, `resume`, a verification, a
study) installs `_on_sigint`, which remembers the request and raises KeyboardInterrupt; and
`fitting()` around every `tuner.fit()` refuses to start once a stop was asked for, and after the
fit tells whether Tune caught a SIGINT meanwhile (even as its last trial ended). A host
program's own handler is left alone; threads other than the main one never touch signals.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

_REQUESTED = threading.Event()
_TERMINATED = threading.Event()  # the stop came as SIGTERM (a job scheduler's), not a Ctrl-C
_CLI_SAYS = threading.Event()  # the command line's handler prints the one interrupt line (`tlmsearch.cli.main`)


def cli_owns_the_line() -> None:
    """The command line prints the interrupt line with its resume command itself (`say` is quiet)."""
    _CLI_SAYS.set()


def cli_done() -> None:
    """The command line's command ended: a later call in this process (a test, a notebook) prints its own line."""
    _CLI_SAYS.clear()


def say(line: str) -> None:
    """Print the line an interrupted long command ends with (its resume command) on stderr, unless
    the command line's handler prints it (from the first instant, once)."""
    if not _CLI_SAYS.is_set() and not _TERMINATED.is_set():  # a SIGTERM's one line is `stopped`'s
        print(line, file=sys.stderr, flush=True)


def on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM stops a long command as Ctrl-C does (state saved, exit handlers run), remembered as
    a termination: a Ctrl-C sent to ourselves, so Tune's handler or ours runs as for a real one;
    where SIGINT is ignored (a command started in the background by a script inherits that) or
    left to the system, the stop is asked for directly."""
    _TERMINATED.set()
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL):
        stop_now()
    os.kill(os.getpid(), signal.SIGINT)


def terminated() -> bool:
    """Whether the stop this command honours came as SIGTERM."""
    return _TERMINATED.is_set()


def stopped(exc: KeyboardInterrupt, hint: str = "") -> None:
    """Outside the command line, a long call stopped by SIGTERM ends the process as SIGTERM would,
    cleanly: one line on stderr (what was stopped, how to resume it) and exit status 143
    (`SystemExit`), not a traceback. A Ctrl-C (or a SIGTERM under the command line, whose handler
    says it) is left to the caller: returns."""
    if not _TERMINATED.is_set() or _CLI_SAYS.is_set():
        return
    text = str(exc) or "interrupted"
    if hint and "resume" not in text:
        text += hint
    print(f"tlmsearch: stopped by SIGTERM: {text}", file=sys.stderr, flush=True)
    raise SystemExit(143) from None


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
    _TERMINATED.clear()
    if _main_thread() and _replaceable(signal.getsignal(signal.SIGINT)):
        signal.signal(signal.SIGINT, _on_sigint)
    if _main_thread() and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, on_sigterm):
        signal.signal(signal.SIGTERM, on_sigterm)  # from the first instruction, not from Ray's start on


def stop_now() -> None:
    """Ask this command to stop as a Ctrl-C would, from a signal handler in the main thread:
    remember the request and raise KeyboardInterrupt (a SIGTERM where SIGINT is ignored)."""
    _on_sigint(signal.SIGINT, None)


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
