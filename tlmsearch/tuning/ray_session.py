"""Start or join Ray for a search, keep it quiet, and clean up after it.

A local Ray is this process's own: its trials keep their temporary folders in a scratch folder
(`TRIAL_TMP_ENV`, inherited by the workers) emptied after every `fit`; at exit (normal, error,
Ctrl-C, or SIGTERM turned into Ctrl-C) Ray is shut down and the scratch and session folders are
deleted. Ray's and Optuna's messages stay hidden unless `TLMSEARCH_VERBOSE=1` (`--verbose`).
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from tlmsearch.errors import ConfigError
from tlmsearch.tuning import interrupts
from tlmsearch.tuning.address import probe_address
from tlmsearch.tuning.resources import local_gpus
from tlmsearch.tuning.trainable import TRIAL_TMP_ENV

OBJECT_STORE_BYTES = 128 * 1024**2  # the trials exchange only small dicts
SESSION_NOTE = ".ray_session"  # in the scratch folder: the local Ray's session folder, swept once its driver is dead

# quiet Ray: our progress line replaces its tables; failures still reach the records
_RAY_ENV = {
    "RAY_AIR_NEW_OUTPUT": "0",
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",  # no per-trial CSV/JSON/TensorBoard files
    "TUNE_DISABLE_STRICT_METRIC_CHECKING": "1",  # a failed trial's last report has no val_loss
    "TUNE_GLOBAL_CHECKPOINT_S": "1",  # save experiment state often: a killed driver loses little
    "RAY_USAGE_STATS_ENABLED": "0",
    "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S": "0",
}


# ----------------------------------------------------------------------------- ray


def quiet_ray() -> None:
    """Set the environment and loggers that keep Ray quiet; call before `ray.init` (the test
    suite starts its shared Ray with this too)."""
    for key, value in _RAY_ENV.items():
        os.environ.setdefault(key, value)
    # the result grid would warn about the per-trial result files we do not write
    logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
    # a local Ray keeps its default token authentication on; its notice saying so is noise here
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    if not verbose_ray():  # e.g. "Stop signal received ... Tuner.restore(...)": the tool says how to resume
        logging.getLogger("ray.tune.tune").setLevel(logging.ERROR)


def ensure_ray(address: str | None = None) -> None:
    """Start a quiet local Ray with this machine's CPUs (and GPUs), or join `address`. A Ray
    already running in this process (the test suite's shared session, a notebook's) is reused."""
    quiet_ray()
    import ray

    verbose = verbose_ray()
    if ray.is_initialized():
        return
    quiet: dict[str, Any] = {"log_to_driver": verbose, "logging_level": logging.WARNING, "include_dashboard": False}
    main = threading.current_thread() is threading.main_thread()
    # ray.init installs its own SIGTERM handler: ours again after it, where the process had none or ours
    default_sigterm = main and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, interrupts.on_sigterm)
    if address:
        probe_address(address)  # one line within seconds, not minutes of silent retries
        try:
            ray.init(address=address, **quiet)
        except (ConnectionError, RuntimeError) as exc:
            raise ConfigError(f"cannot join the Ray cluster at {address}: {exc}") from None
        if address.strip() == "auto":  # whatever runs on this machine (or RAY_ADDRESS): say which
            print(joined_line(address, _cluster_facts(ray)), file=sys.stderr, flush=True)
        if default_sigterm:
            _sigterm_as_sigint()
        return
    from tlmsearch.training.hardware import cpu_count  # lazy: heavy (torch)

    sweep_dead_scratch()
    scratch = Path(tempfile.mkdtemp(prefix=f"tlmsearch-run-{os.getpid()}-"))
    os.environ[TRIAL_TMP_ENV] = str(scratch)  # the workers of a local Ray inherit it
    # address="local": a fresh instance of our own, never some other Ray found on the machine
    context = ray.init(
        address="local", num_cpus=cpu_count(), num_gpus=local_gpus(), object_store_memory=OBJECT_STORE_BYTES, **quiet
    )
    folder = getattr(context, "address_info", {}).get("session_dir")  # the session folder, deleted at exit
    session = Path(folder) if folder else None
    if session is not None:  # for `sweep_dead_scratch`, should this process be killed where no exit handler runs
        (scratch / SESSION_NOTE).write_text(str(session))
    atexit.register(_clean_up, scratch, session)  # runs before Ray's own exit handler (registered earlier)
    if default_sigterm:
        _sigterm_as_sigint()


def joined_line(address: str, facts: dict[str, Any]) -> str:
    """The line that says which cluster `--address` joined: `auto` finds whatever Ray runs on the
    machine (or RAY_ADDRESS names), so the address it stood for, the nodes and the resources."""
    where = facts.get("gcs_address") or address
    asked = f" (--address {address})" if address.strip() != where else ""
    resources = facts.get("resources") or {}
    cpus, gpus = resources.get("CPU", 0), resources.get("GPU", 0)
    nodes = facts.get("nodes", 0)
    return (
        f"joined the Ray cluster at {where}{asked}: {nodes} node{'s' if nodes != 1 else ''}, {cpus:g} CPUs, "
        f"{gpus:g} GPUs"
    )


def _cluster_facts(ray: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    try:
        facts["gcs_address"] = ray.get_runtime_context().gcs_address
        facts["nodes"] = sum(1 for n in ray.nodes() if n.get("Alive"))
        facts["resources"] = ray.cluster_resources()
    except Exception:  # noqa: BLE001 - the line is a courtesy: never fail a run for it
        pass
    return facts


def verbose_ray() -> bool:
    """Whether Ray's and Optuna's own messages should reach the user (`--verbose`)."""
    return os.environ.get("TLMSEARCH_VERBOSE") == "1"


def sweep_dead_scratch(parent: Path | None = None) -> list[Path]:
    """Delete the scratch folders of drivers that no longer run (killed with SIGKILL, where no
    exit handler runs), and the Ray session folder each names (its logs: tens of MB a search);
    the pid in the folder's name says whose it is. Returns what it deleted."""
    gone = []
    for folder in Path(parent or tempfile.gettempdir()).glob("tlmsearch-run-*-*"):
        pid = folder.name.split("-")[2]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            session = _dead_session(folder, pid)
            shutil.rmtree(folder, ignore_errors=True)
            gone.append(folder)
            if session is not None:
                shutil.rmtree(session, ignore_errors=True)
                gone.append(session)
        except PermissionError:  # alive, someone else's
            continue
    return gone


def _dead_session(scratch: Path, pid: str) -> Path | None:
    """The Ray session folder a dead driver's scratch folder names: only a session of that
    driver's own (named for its pid, as a local Ray names its head's), never a shared cluster's."""
    try:
        session = Path((scratch / SESSION_NOTE).read_text().strip())
    except (OSError, UnicodeDecodeError):
        return None
    if session.name.startswith("session_") and session.name.endswith(f"_{pid}") and session.is_dir():
        return session
    return None


def empty_scratch() -> None:
    """Delete the trial folders left in this process's scratch folder (trials killed mid-run)."""
    scratch = os.environ.get(TRIAL_TMP_ENV)
    if scratch and Path(scratch).is_dir():
        for child in Path(scratch).iterdir():
            if child.name != SESSION_NOTE:
                shutil.rmtree(child, ignore_errors=True)


def _clean_up(scratch: Path, session: Path | None) -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()
    shutil.rmtree(scratch, ignore_errors=True)
    if session is None:
        return
    shutil.rmtree(session, ignore_errors=True)
    latest = session.parent / "session_latest"
    if latest.is_symlink() and os.readlink(latest) == str(session):
        latest.unlink(missing_ok=True)


def _sigterm_as_sigint() -> None:
    """SIGTERM stops a search like Ctrl-C (state saved, exit handlers run) instead of killing it
    (`interrupts.on_sigterm`). Replaces the handler `ray.init` installs (`sys.exit(15)` from
    wherever the driver is, which Tune does not treat as a stop); called only where the process
    had the default handler (or ours) before Ray started (a host program's own handler stays)."""
    signal.signal(signal.SIGTERM, interrupts.on_sigterm)
