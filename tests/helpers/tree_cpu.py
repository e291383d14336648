"""The CPU seconds of a command's whole process tree, Ray's daemons and workers included.

`python tests/helpers/tree_cpu.py python -m pytest -q tests/integration/test_study.py` runs the
command as a child subreaper: every process it starts, however deep and in whatever session,
is reaped here once its parent is gone (a killed driver's Ray, a Tune worker), so the children's
resource usage counts all of them, where `/usr/bin/time` misses what a killed or daemonised
parent never waited for. On stderr at the end: `TREE_CPU user=.. sys=.. total=.. wall=.. rc=..`
and the processes still alive 90 s after the command ended (left running, not counted). Linux only.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
LINGER_S = 90.0  # how long orphans may outlive the command and still be counted


def _children() -> list[int]:
    me, out = str(os.getpid()), []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[1] == me:
                    out.append(int(pid))
        except OSError:
            continue
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: tree_cpu.py COMMAND [ARG ...]", file=sys.stderr)
        return 2
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("tree_cpu.py: cannot become a child subreaper (Linux only)", file=sys.stderr)
        return 2
    start = time.time()
    pid = os.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    rc: int | None = None
    ended = 0.0
    while True:
        try:
            got, status = os.waitpid(-1, 0 if rc is None else os.WNOHANG)
        except ChildProcessError:
            break
        if got == 0:  # the command ended; orphans still running
            if time.time() - ended > LINGER_S:
                break
            time.sleep(0.5)
        elif got == pid:
            rc, ended = os.waitstatus_to_exitcode(status), time.time()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"TREE_CPU user={ru.ru_utime:.1f} sys={ru.ru_stime:.1f} total={ru.ru_utime + ru.ru_stime:.1f} "
        f"wall={time.time() - start:.1f} rc={rc} left={_children()}",
        file=sys.stderr,
    )
    return 1 if rc is None else rc


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
