"""SIGTERM stops a long command like Ctrl-C even where SIGINT is ignored: a command a script
starts in the background (`nohup tlmsearch study ... &`) inherits an ignored SIGINT, and the
SIGTERM handler used to resend itself as a SIGINT, which then did nothing (a study kept training
after `kill PID`). Each case runs in a fresh interpreter so no handler leaks into pytest."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

CHILD = r"""
import os, signal, time
from tlmsearch.tuning import interrupts, ray_session
print("sigint", "ignored" if signal.getsignal(signal.SIGINT) is signal.SIG_IGN else "handled", flush=True)
interrupts.watch()  # what a search, verify or study does first
ray_session._sigterm_as_sigint()  # what starting Ray does where SIGTERM had its default
try:
    if os.environ.get("SEND_SIGINT"):  # a Ctrl-C: a shell that ignored it for us keeps it ignored
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.3)
        print("after sigint: running", flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(2)
    print("after sigterm: running", flush=True)
except KeyboardInterrupt:
    print("after sigterm: stopped, requested", interrupts.requested(), flush=True)
"""


def _run(ignore_sigint: bool, send_sigint: bool = False) -> list[str]:
    def preexec() -> None:
        if ignore_sigint:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # as bash does for a background job of a script

    env = {"SEND_SIGINT": "1"} if send_sigint else {}
    import os

    out = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec,
        env={**os.environ, **env},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.splitlines()


@pytest.mark.parametrize("ignore_sigint", [True, False])
def test_sigterm_stops_like_ctrl_c_whether_or_not_sigint_is_ignored(ignore_sigint: bool) -> None:
    lines = _run(ignore_sigint)
    assert lines[0] == ("sigint ignored" if ignore_sigint else "sigint handled")
    assert lines[-1] == "after sigterm: stopped, requested True", lines


def test_an_ignored_ctrl_c_stays_ignored_and_sigterm_still_stops() -> None:
    assert _run(True, send_sigint=True) == [
        "sigint ignored",
        "after sigint: running",
        "after sigterm: stopped, requested True",
    ]
