"""Run the `tlmsearch` CLI and SIGKILL it at a chosen point, deterministically (tests only).

`python tests/helpers/killing_driver.py search ...` (or `resume ...`) runs the CLI in this
process with hooks set from the environment:

- `KILL_AFTER_SNAPSHOT=n`: kill the driver right after Tune's n-th experiment snapshot of this
  process has been written and copied into `tune/` (the state files are whole, and they are
  the newest the resume will see);
- `FREEZE_SNAPSHOT_AFTER=n`: after n snapshots Tune saves no more (its state lags behind: the
  trials that end or start afterwards are recorded in `trials.jsonl` but missing or RUNNING in
  Tune's snapshot, as when a kill lands between two snapshots);
- `KILL_AFTER_RECORDS=n`: kill the driver right after `trials.jsonl` holds n records.

The driver's Ray processes survive it, as after a real crash: the caller ends its process
group.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any


def _kill() -> None:
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def install() -> None:
    from ray.tune.execution.tune_controller import TuneController

    from tlmsearch.rundir.records import RecordLog

    kill_snap = int(os.environ.get("KILL_AFTER_SNAPSHOT") or 0)
    freeze = int(os.environ.get("FREEZE_SNAPSHOT_AFTER") or 0)
    kill_records = int(os.environ.get("KILL_AFTER_RECORDS") or 0)
    saves = [0]

    save_to_dir, checkpoint = TuneController.save_to_dir, TuneController.checkpoint

    def save(self: Any) -> None:
        if freeze and saves[0] >= freeze:
            return
        saves[0] += 1
        save_to_dir(self)

    def snapshot(self: Any, force: bool = False, wait: bool = False) -> None:
        before = saves[0]
        checkpoint(self, force=force, wait=wait or bool(kill_snap))
        if kill_snap and before < kill_snap <= saves[0]:
            _kill()

    TuneController.save_to_dir, TuneController.checkpoint = save, snapshot  # type: ignore[method-assign]

    append = RecordLog.append

    def append_then_maybe_kill(self: RecordLog, record: Any) -> bool:
        written = append(self, record)
        if kill_records and written and len(self.seen) >= kill_records:
            _kill()
        return written

    RecordLog.append = append_then_maybe_kill  # type: ignore[method-assign]


if __name__ == "__main__":
    install()
    from tlmsearch.cli import main

    sys.argv[0] = "tlmsearch"
    raise SystemExit(main(sys.argv[1:]))
