"""Ctrl-C honoured between Tune's fits (issue 31), with a stand-in for Tune's SIGINT handler: Tune
installs it when a fit starts, and it puts back the handler it found only when a SIGINT comes, so
a fit that saw none leaves it installed, and it ate the next Ctrl-C. No Ray here."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from tlmsearch.tuning import interrupts


@pytest.fixture(autouse=True)
def _restore_sigint() -> Iterator[None]:
    """Each test starts as the CLI does, with Python's own SIGINT handler: a handler an earlier
    test of the same process left behind (one `watch` must not replace) changed the outcome."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)
    interrupts._REQUESTED.clear()


def _tune_fit(sigint: bool) -> threading.Event:
    """What `Tuner.fit` does with SIGINT (ray.tune.tune._setup_signal_catching), and a Ctrl-C."""
    original = signal.getsignal(signal.SIGINT)
    stop = threading.Event()

    def signal_interrupt_tune_run(signum: int, frame: object) -> None:
        stop.set()
        signal.signal(signal.SIGINT, original)

    signal.signal(signal.SIGINT, signal_interrupt_tune_run)
    if sigint:
        os.kill(os.getpid(), signal.SIGINT)  # the handler runs at once, in this (main) thread
    return stop


def test_a_ctrl_c_between_fits_is_not_eaten_by_tunes_stale_handler() -> None:
    interrupts.watch()
    with interrupts.fitting():
        _tune_fit(sigint=False)  # the noise floor's fit: ended without a Ctrl-C
    assert signal.getsignal(signal.SIGINT) is interrupts._on_sigint  # Tune's stale handler replaced
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)  # before the search's own fit
    assert interrupts.requested()
    with pytest.raises(KeyboardInterrupt), interrupts.fitting():  # even where that exception was swallowed
        raise AssertionError("a fit started after the Ctrl-C")


def test_a_ctrl_c_tune_caught_as_its_last_trial_ended_is_remembered() -> None:
    interrupts.watch()
    with interrupts.fitting():
        stop = _tune_fit(sigint=True)
    assert stop.is_set() and interrupts.requested()


def test_a_fit_without_a_ctrl_c_asks_nothing() -> None:
    interrupts.watch()
    for _ in range(3):
        with interrupts.fitting():
            _tune_fit(sigint=False)
    assert not interrupts.requested()


def test_a_host_programs_handler_stays() -> None:
    def host(signum: int, frame: object) -> None:
        pass

    signal.signal(signal.SIGINT, host)
    interrupts.watch()
    assert signal.getsignal(signal.SIGINT) is host
    with interrupts.fitting():
        pass
    assert signal.getsignal(signal.SIGINT) is host and not interrupts.requested()


def test_watch_forgets_an_earlier_command_s_request() -> None:
    interrupts._REQUESTED.set()
    interrupts.watch()
    assert not interrupts.requested()
