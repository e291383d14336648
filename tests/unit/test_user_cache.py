"""The suite never writes the user's cache (tests/conftest.py points $TLMSEARCH_CACHE at a
session folder): a run with no cache of its own records its step rate there, and the
user's rate file gains nothing from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_cache import SessionCache

from tlmsearch.cli import main
from tlmsearch.core.base import DataConfig
from tlmsearch.costs.rates import rates_file


def _lines(path: Path) -> set[str]:
    try:
        return set(path.read_text(errors="replace").splitlines())
    except OSError:
        return set()


def test_the_default_cache_is_the_sessions(session_cache: SessionCache) -> None:
    assert DataConfig().cache_path() == session_cache.session
    assert session_cache.session != session_cache.user
    assert not session_cache.session.is_relative_to(session_cache.user)


def test_a_run_records_its_rate_in_the_session_cache_only(
    session_cache: SessionCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("tlmsearch.training.trainer.matmul_peak", lambda device, dtype, cache_dir=None: 1e11)
    ours, users = rates_file(session_cache.session), rates_file(session_cache.user)
    before = _lines(ours)
    argv = ["train", "--preset", "tiny", "--corpus", "pydoc", "--steps", "6", "--eval-interval", "3"]
    assert main([*argv, "--threads", "1", "--runs-dir", str(tmp_path / "runs"), "--json"]) == 0
    capsys.readouterr()
    added = _lines(ours) - before
    assert len(added) == 1  # this run's measurement, in the session's cache
    assert not added & _lines(users)  # and not in the user's
