"""What the CLI refusal tests share: trainings replaced by fakes that fail the test when called,
the one line a refusal prints, and a verify of a finished search run that must be refused before
it writes anything (exit 2, one line, the run directory as it was)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from analysis_fakes import search_records, write_run

from tlmsearch.cli import main


def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any training (a verify's runs, a search's Ray) fails the test."""

    def trained(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("nothing may train after a refusal")

    monkeypatch.setattr("tlmsearch.tuning.verify.run_fixed", trained)
    monkeypatch.setattr("tlmsearch.tuning.runner.ensure_ray", trained)


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line on stderr (no traceback), which the test then reads."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def search_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished search run to verify, with every training replaced by `no_training`'s fakes."""
    run = write_run(tmp_path / "run", search_records())
    no_training(monkeypatch)
    return run


def refused_verify(run: Path, flags: Sequence[str], capsys: pytest.CaptureFixture[str]) -> str:
    """`tlmsearch verify RUN --steps 40 FLAGS --no-report` exits 2 with one line (returned) and
    leaves the run directory as it was."""
    before = sorted(p.name for p in run.iterdir())
    assert main(["verify", str(run), "--steps", "40", *flags, "--no-report"]) == 2
    line = one_line(capsys)
    assert sorted(p.name for p in run.iterdir()) == before  # nothing written
    return line
