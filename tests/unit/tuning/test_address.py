"""A Ray address where nothing answers ends in one line within seconds (not minutes of retries)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tlmsearch.errors import ConfigError
from tlmsearch.tuning.address import probe_address, split_address


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_split_address_forms() -> None:
    assert split_address("10.0.0.1:6379") == ("10.0.0.1", 6379)
    assert split_address("ray://head:10001") == ("head", 10001)
    assert split_address("[::1]:6379") == ("::1", 6379)
    for bad in ("head", "head:", ":6379", "head:0", "head:70000", "head:abc"):
        with pytest.raises(ConfigError, match="HOST:PORT"):
            split_address(bad)


def test_closed_local_port_is_refused_at_once() -> None:
    address = f"127.0.0.1:{_closed_port()}"
    start = time.monotonic()
    with pytest.raises(ConfigError, match=f"cannot reach the Ray cluster at {address}") as info:
        probe_address(address)
    assert time.monotonic() - start < 5
    assert "\n" not in str(info.value) and "ray start --head" in str(info.value)


def test_unresolvable_name() -> None:
    with pytest.raises(ConfigError, match="unknown host 'no-such-host.invalid'"):
        probe_address("no-such-host.invalid:6379", timeout=2)


def test_listening_port_passes() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        probe_address(f"127.0.0.1:{s.getsockname()[1]}")
        probe_address(f"ray://127.0.0.1:{s.getsockname()[1]}")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tlmsearch", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


@pytest.mark.slow
def test_cli_search_and_resume_with_a_dead_address_end_in_one_line(tmp_path: Path) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    start = time.monotonic()
    search = _cli("search", "--preset", "tiny", "--trials", "2", "--name", "x", "--runs-dir", str(tmp_path),
                  "--address", address, cwd=tmp_path)  # fmt: skip
    assert search.returncode == 2, search.stderr
    lines = search.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot reach the Ray cluster at {address}" in lines[0], search.stderr
    assert not (tmp_path / "x").exists()  # nothing created for a search that never started
    from tlmsearch.configs.search import SearchConfig

    run = tmp_path / "r"
    run.mkdir()
    SearchConfig(name="r", runs_dir=str(tmp_path), preset="tiny", trials=2).save(run / "search.yaml")
    resume = _cli("resume", str(run), "--address", address, cwd=tmp_path)
    assert resume.returncode == 2, resume.stderr
    assert len(resume.stderr.strip().splitlines()) == 1 and "cannot reach" in resume.stderr, resume.stderr
    assert time.monotonic() - start < 60  # two interpreter starts on a loaded machine, not 300 s of retries
