"""Prices before training: `study --dry-run` trains nothing and answers in seconds; a study, a
search or a compare priced beyond --max-hours is refused in one line (exit 2, nothing written)
unless --yes, and the Python API refuses the same way unless yes=True."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import tlmsearch
from tlmsearch.cli import main
from tlmsearch.errors import UserError


@pytest.fixture(autouse=True)
def _no_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    peak = lambda device, dtype, cache_dir=None: 9.06e10  # noqa: E731 - the measured peak is tested apart
    monkeypatch.setattr("tlmsearch.training.hardware.matmul_peak", peak)
    monkeypatch.setattr("tlmsearch.costs.calibrate.current_load", lambda cores: 0.0)
    monkeypatch.setattr("tlmsearch.training.trainer.train", lambda *a, **k: pytest.fail("trained to price"))
    monkeypatch.setattr("tlmsearch.costs.calibrate.calibrate", lambda *a, **k: pytest.fail("trained to price"))


def test_study_dry_run_prices_the_default_study_without_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start = time.monotonic()
    assert main(["study", "--dry-run", "--runs-dir", str(tmp_path / "runs")]) == 0
    assert time.monotonic() - start < 10
    out = capsys.readouterr().out
    assert "total:" in out and " h on this machine" in out and "how the range is formed" in out
    for arch in ("transformer", "gated_attention", "titans", "hope_attention"):
        assert f"  {arch}" in out
    assert not (tmp_path / "runs").exists()


def test_a_study_beyond_the_limit_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    assert main(["study", "--runs-dir", str(runs), "--name", "big"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "study big is priced at up to" in err and "beyond the 12 h limit" in err
    assert "--trials" in err and "--yes" in err
    assert not (runs / "big").exists()
    with pytest.raises(UserError, match="beyond the 1 h limit"):
        tlmsearch.study(runs_dir=str(runs), name="big", max_hours=1)
    assert not (runs / "big").exists()


def test_a_search_and_a_compare_beyond_the_limit_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    argv = ["search", "--preset", "cpu-s", "--trials", "64", "--steps", "5000", "--runs-dir", str(runs)]
    assert main([*argv, "--name", "s", "--max-hours", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "error: search s is priced at up to" in err and "beyond the 2 h limit" in err, err
    assert not (runs / "s").exists()
    argv = ["compare", "--families", "uniform", "cosine", "--preset", "cpu-s", "--seeds", "8", "--steps", "20000"]
    assert main([*argv, "--runs-dir", str(runs), "--max-hours", "1"]) == 2
    assert "beyond the 1 h limit" in capsys.readouterr().err
    assert not runs.exists() or not any(runs.iterdir())
