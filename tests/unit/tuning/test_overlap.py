"""The study's phase scheduler: tasks start once what they need is done, at once when they can,
and an error stops everything not yet started (no Ray: plain threads and fake tasks)."""

from __future__ import annotations

import threading
import time

import pytest

from tlmsearch.studies.phases import phase_graph
from tlmsearch.tuning.overlap import Task, check_graph, ready, run_tasks


def test_the_graph_overlaps_a_search_with_the_last_verification() -> None:
    g = phase_graph(("a", "b", "c"))
    assert g["a/search"] == () and g["b/search"] == ("a/search",) and g["c/search"] == ("b/search",)
    assert g["b/verify"] == ("b/search",)  # not after a/verify: b's search runs beside a's verify
    assert g["choose"] == ("a/verify", "b/verify", "c/verify")
    assert all(g[f"transfer/{x}"] == ("choose",) for x in "abc")
    check_graph([Task(k, lambda: None, after) for k, after in g.items()])


def test_the_sequential_graph_is_the_old_order() -> None:
    g = phase_graph(("a", "b"), overlap=False)
    assert list(g) == ["a/search", "a/verify", "b/search", "b/verify", "choose", "transfer/a", "transfer/b"]
    assert all(after == (list(g)[i - 1],) for i, after in enumerate(g.values()) if i)


def test_the_random_control_follows_its_search_in_the_chain() -> None:
    g = phase_graph(("a", "b"), random_control=True)
    assert g["a/random"] == ("a/search",) and g["b/search"] == ("a/random",) and g["b/random"] == ("b/search",)
    assert g["a/verify"] == ("a/random",) and g["b/verify"] == ("b/random",)
    check_graph([Task(k, lambda: None, after) for k, after in g.items()])
    seq = phase_graph(("a", "b"), overlap=False, random_control=True)
    assert list(seq)[:6] == ["a/search", "a/random", "a/verify", "b/search", "b/random", "b/verify"]
    assert list(seq)[6:] == ["choose", "transfer/a", "transfer/b"]


def test_check_graph_refuses_unknown_or_later_prerequisites() -> None:
    with pytest.raises(ValueError, match="not listed before"):
        check_graph([Task("a", lambda: None, ("b",)), Task("b", lambda: None)])
    with pytest.raises(ValueError, match="twice"):
        check_graph([Task("a", lambda: None), Task("a", lambda: None)])
    tasks = [Task("a", lambda: None), Task("b", lambda: None, ("a",)), Task("c", lambda: None)]
    assert [t.key for t in ready(tasks, set(), set())] == ["a", "c"]
    assert [t.key for t in ready(tasks, {"a"}, {"a", "c"})] == ["b"]


def test_a_task_starts_while_an_unrelated_one_still_runs() -> None:
    """b (needs a) starts while c (needs nothing) is still running; the results are returned."""
    log: list[str] = []
    c_may_end = threading.Event()

    def c() -> str:
        log.append("c start")
        assert c_may_end.wait(10), "b never started beside c"
        log.append("c end")
        return "C"

    def b() -> str:
        log.append("b ran")
        c_may_end.set()
        return "B"

    results = run_tasks([Task("a", lambda: "A"), Task("c", c), Task("b", b, ("a",))], poll_s=0.01)
    assert results == {"a": "A", "b": "B", "c": "C"}
    assert log.index("b ran") < log.index("c end")


def test_an_error_stops_what_has_not_started_and_is_raised_after_the_others_end() -> None:
    started: list[str] = []
    slow_done = threading.Event()

    def boom() -> None:
        started.append("boom")
        raise RuntimeError("broken phase")

    def slow() -> None:
        started.append("slow")
        time.sleep(0.2)
        slow_done.set()

    tasks = [Task("slow", slow), Task("boom", boom), Task("later", lambda: started.append("later"), ("boom",)),
             Task("after_slow", lambda: started.append("after_slow"), ("slow",))]  # fmt: skip
    with pytest.raises(RuntimeError, match="broken phase"):
        run_tasks(tasks, poll_s=0.01)
    assert slow_done.is_set()  # the running task was waited for
    assert "later" not in started and "after_slow" not in started
