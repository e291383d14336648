"""Run dependent tasks at once: each in its own thread as soon as the tasks it needs are done.

A study (`tuning.study`) is a small graph of phases; run one after another, each phase's last
trials leave CPU slots idle. `run_tasks` starts every phase whose prerequisites are done, so the
next architecture's search trains beside the last one's verification, each an ordinary call
fitting its own Tuner in its own thread; Ray's resources are the shared concurrency limit.
Tune stops a fit on Ctrl-C in the main thread only: `tuners_in_threads` hands every Tuner in a
worker thread one shared event instead, which `run_tasks` sets on a Ctrl-C, a SIGTERM or a
failed task (every Tuner then stops as after a Ctrl-C, and the study resumes from there); it
also serialises Tune's trainable registry, which is not thread-safe. Only wall time depends on
the overlap: a trial's record is a function of its profile, seed and config.
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


_REGISTRY_METHODS = ("register", "flush_values", "unregister")


def _tune_internals() -> tuple[Any, Any, Callable[[], Any]] | None:
    """(Tune's module, its trainable registry, its signal set-up) that `tuners_in_threads`
    adapts, or None where this Ray lacks them (a study then runs its phases one after another)."""
    try:
        import ray.tune.registry as registry
        import ray.tune.tune as tune_module
    except ImportError:
        return None
    # private (Ray Tune): the one trainable registry of the process, which is not thread-safe, and
    # the function that installs a fit's Ctrl-C handler: no public API stops a fit in another thread
    reg, signals = getattr(registry, "_global_registry", None), getattr(tune_module, "_setup_signal_catching", None)
    if callable(signals) and all(callable(getattr(reg, name, None)) for name in _REGISTRY_METHODS):
        return tune_module, reg, signals
    return None


def tune_can_stop_threads() -> bool:
    """Whether this Ray Tune has what `tuners_in_threads` adapts."""
    return _tune_internals() is not None


@contextmanager
def tuners_in_threads(stop: threading.Event) -> Iterator[None]:
    """Make Ray Tune fit Tuners in several threads of one driver at once, while in this block:
    a Tuner fitted in a worker thread ends its loop when `stop` is set, as a Ctrl-C ends one in
    the main thread (state saved, running trials left to a resume); the trainable registry takes
    one writer at a time (its flush iterates a dict another thread's registration would change)."""
    internals = _tune_internals()
    if internals is None:
        raise RuntimeError("this Ray Tune cannot fit Tuners in threads (tune_can_stop_threads)")
    tune_module, reg, original = internals

    def setup() -> Any:
        return original() if threading.current_thread() is threading.main_thread() else stop

    lock = threading.RLock()

    def locked(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return method(*args, **kwargs)

        return call

    for name in _REGISTRY_METHODS:
        setattr(reg, name, locked(getattr(reg, name)))  # the instance's attribute shadows the class's method
    tune_module._setup_signal_catching = setup  # private (Ray Tune): see `_tune_internals`
    try:
        yield
    finally:
        tune_module._setup_signal_catching = original  # private (Ray Tune): put back
        for name in _REGISTRY_METHODS:
            delattr(reg, name)
