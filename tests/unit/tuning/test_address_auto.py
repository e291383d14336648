"""`--address auto` says which cluster it joined (issue 31): it finds whatever Ray runs on the
machine (or RAY_ADDRESS names), so the driver prints the address it stood for, the nodes and the
resources. A fake `ray` module stands in: no Ray starts here."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from tlmsearch.tuning import ray_session
from tlmsearch.tuning.ray_session import ensure_ray, joined_line


def _fake_ray(joined: list[str]) -> types.ModuleType:
    ray: Any = types.ModuleType("ray")
    state = {"up": False}
    ray.is_initialized = lambda: state["up"]

    def init(address: str, **kwargs: Any) -> None:
        joined.append(address)
        state["up"] = True

    ray.init = init
    ray.shutdown = lambda: state.update(up=False)
    ray.get_runtime_context = lambda: types.SimpleNamespace(gcs_address="10.0.0.7:6379")
    ray.nodes = lambda: [{"Alive": True}, {"Alive": True}, {"Alive": False}]
    ray.cluster_resources = lambda: {"CPU": 96.0, "GPU": 8.0}
    return ray


def test_address_auto_names_the_cluster_it_joined(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    joined: list[str] = []
    monkeypatch.setitem(sys.modules, "ray", _fake_ray(joined))
    monkeypatch.setattr(ray_session, "probe_address", lambda address: None)
    monkeypatch.setattr(ray_session, "_sigterm_as_sigint", lambda: None)
    ensure_ray("auto")
    assert joined == ["auto"]
    err = capsys.readouterr().err
    assert err == "joined the Ray cluster at 10.0.0.7:6379 (--address auto): 2 nodes, 96 CPUs, 8 GPUs\n"
    sys.modules["ray"].shutdown()


def test_an_address_given_in_full_is_joined_without_a_word(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    joined: list[str] = []
    monkeypatch.setitem(sys.modules, "ray", _fake_ray(joined))
    monkeypatch.setattr(ray_session, "probe_address", lambda address: None)
    monkeypatch.setattr(ray_session, "_sigterm_as_sigint", lambda: None)
    ensure_ray("10.0.0.7:6379")
    assert joined == ["10.0.0.7:6379"] and capsys.readouterr().err == ""
    sys.modules["ray"].shutdown()


def test_the_line_survives_missing_facts() -> None:
    assert joined_line("auto", {}) == "joined the Ray cluster at auto: 0 nodes, 0 CPUs, 0 GPUs"
    one = joined_line("auto", {"gcs_address": "h:1", "nodes": 1, "resources": {"CPU": 4.0}})
    assert one == "joined the Ray cluster at h:1 (--address auto): 1 node, 4 CPUs, 0 GPUs"


def test_auto_without_a_terminal_joins_only_a_cluster_it_was_told_about(monkeypatch: pytest.MonkeyPatch) -> None:
    from tlmsearch.errors import ConfigError
    from tlmsearch.tuning import address as address_module
    from tlmsearch.tuning.address import check_auto_expected

    monkeypatch.setattr(address_module, "resolve_auto", lambda address: "127.0.0.1:6379")
    with pytest.raises(ConfigError, match=r"found the Ray cluster at 127\.0\.0\.1:6379.*--address 127\.0\.0\.1:6379"):
        check_auto_expected("auto", interactive=False, environ={})
    check_auto_expected("auto", interactive=False, environ={"RAY_ADDRESS": "127.0.0.1:6379"})  # told: joins
    check_auto_expected("auto", interactive=True, environ={})  # at a terminal: joins and says which
    check_auto_expected("127.0.0.1:6379", interactive=False, environ={})  # given in full
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ConfigError, match="was not told about it"):  # pytest's stdin is no terminal
        address_module.probe_address("auto")
