"""Run dependent tasks at once: each in its own thread as soon as the tasks it needs are done.

A study (`tlmsearch.tuning.study`) is a small graph of phases: an architecture's verification
needs its search, the transfers need every verification. Run one after another, each phase's
last trials leave CPU slots idle (a verification with one trial left uses one core of two).
`run_tasks` starts every phase whose prerequisites are done, so the next architecture's search
trains beside the last one's verification; Ray's resources are the shared concurrency limit
(a trial asks for `cpus_per_trial`, so no more trials run than the machine has slots).

Each task is an ordinary call (`runner.search`, `verify`, `run_fixed`), fitting its own Tuner in
its own thread. Tune installs its Ctrl-C handler only in the main thread, so a Tuner in another
thread cannot be stopped the usual way; `tuners_in_threads` hands every Tuner started in a
worker thread one shared event instead, and `run_tasks` sets it when the main thread is
interrupted (Ctrl-C, SIGTERM) or a task fails: every Tuner then saves its state and stops as
after a Ctrl-C, and the study resumes from there. It also serialises the writes to Tune's
per-process trainable registry, which is not thread-safe, and each Tuner registers its
trainable under a name of its own (`runner.trainable_for`).

Results do not depend on this: a trial's record is a function of its profile, seed and config;
only the wall time (and, within a search, which results the sampler has seen when it samples,
as with any parallel search) depends on timing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Task:
    """A named call and the names of the tasks that must be done before it starts."""

    key: str
    run: Callable[[], Any]
    after: tuple[str, ...] = ()


def check_graph(tasks: Sequence[Task]) -> None:
    """Unique keys, known prerequisites listed earlier (so the graph has no cycle)."""
    seen: set[str] = set()
    for t in tasks:
        if t.key in seen:
            raise ValueError(f"task {t.key!r} listed twice")
        unknown = [k for k in t.after if k not in seen]
        if unknown:
            raise ValueError(f"task {t.key!r} needs {unknown}, which are not listed before it")
        seen.add(t.key)


def ready(tasks: Sequence[Task], done: set[str], started: set[str]) -> list[Task]:
    """The tasks that may start now, in list order (pure)."""
    return [t for t in tasks if t.key not in started and all(k in done for k in t.after)]


def run_tasks(tasks: Sequence[Task], *, stop: threading.Event | None = None, poll_s: float = 0.5) -> dict[str, Any]:
    """Run `tasks`, each in a thread once its prerequisites are done; return {key: result}.

    The first error (or a KeyboardInterrupt of the main thread) sets `stop`, starts nothing
    more, waits for the running tasks to end and is raised.
    """
    check_graph(tasks)
    stop = stop or threading.Event()
    results: dict[str, Any] = {}
    errors: list[BaseException] = []
    status: dict[str, str] = {}  # key -> running | done | failed
    changed = threading.Condition()

    def body(task: Task) -> None:
        try:
            value = task.run()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, raised there
            with changed:
                errors.append(exc)
                status[task.key] = "failed"
                stop.set()
                changed.notify_all()
            return
        with changed:
            results[task.key] = value
            status[task.key] = "done"
            changed.notify_all()

    threads: list[threading.Thread] = []
    try:
        with changed:
            while True:
                done = {k for k, v in status.items() if v == "done"}
                fresh = [] if stop.is_set() else ready(tasks, done, set(status))
                for t in fresh:
                    status[t.key] = "running"
                    thread = threading.Thread(target=body, args=(t,), name=f"task {t.key}", daemon=True)
                    threads.append(thread)
                    thread.start()
                if "running" not in status.values():
                    break
                changed.wait(timeout=poll_s)
    except KeyboardInterrupt as exc:
        stop.set()
        errors.insert(0, exc)
        for th in threads:
            _join_patiently(th)
    if errors:
        raise errors[0]
    return results


def _join_patiently(thread: threading.Thread) -> None:
    """Wait for a stopping task; a second Ctrl-C leaves at once (like a second Ctrl-C in Tune)."""
    while thread.is_alive():
        thread.join(timeout=0.5)


# ----------------------------------------------------------------------------- Tune


def tune_can_stop_threads() -> bool:
    """Whether this Ray Tune has what `tuners_in_threads` adapts (private parts of Ray Tune; a
    study runs its phases one after another without them)."""
    try:
        import ray.tune.registry as registry
        import ray.tune.tune as tune_module
    except ImportError:
        return False
    reg = getattr(registry, "_global_registry", None)
    return callable(getattr(tune_module, "_setup_signal_catching", None)) and all(
        callable(getattr(reg, name, None)) for name in ("register", "flush_values", "unregister")
    )


@contextmanager
def tuners_in_threads(stop: threading.Event) -> Iterator[None]:
    """Make Ray Tune fit Tuners in several threads of one driver at once, while in this block:

    - every Tuner fitted in a worker thread ends its loop when `stop` is set, exactly as a
      Ctrl-C ends one in the main thread (state saved, running trials left to a resume); Tuners
      in the main thread keep Tune's own Ctrl-C handler;
    - Tune's trainable registry (one per process, written by every Tuner when it starts) takes
      one writer at a time: its flush iterates a dict that another thread's registration would
      change under it ("dictionary changed size during iteration").
    """
    import ray.tune.registry as registry
    import ray.tune.tune as tune_module

    # private (Ray Tune): Tune has no public way to stop a fit outside the main thread, nor a
    # thread-safe trainable registry; `tune_can_stop_threads` checks both exist first
    original = tune_module._setup_signal_catching

    def setup() -> threading.Event:
        if threading.current_thread() is threading.main_thread():
            return original()
        return stop

    reg = registry._global_registry
    lock = threading.RLock()
    methods = {name: getattr(reg, name) for name in ("register", "flush_values", "unregister")}

    def locked(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return method(*args, **kwargs)

        return call

    tune_module._setup_signal_catching = setup
    for name, method in methods.items():
        setattr(reg, name, locked(method))  # the instance's attribute shadows the class's method
    try:
        yield
    finally:
        tune_module._setup_signal_catching = original
        for name in methods:
            delattr(reg, name)
