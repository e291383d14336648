"""A Ctrl-C ends every long command with one line that says how to resume it, from its first
instant (issue 50): printed by the command line's one interrupt handler, not by whichever phase
happened to be running. The four moments that missed it: the instant a search's run directory
appears (nothing recorded: it is removed and the command itself is the one to run again), when
search.yaml is written, between the noise floor and the search, and the first instant of a
`ladder run`. Each moment is reached by making the step after it raise KeyboardInterrupt (what the
SIGINT handler raises there); no Ray starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tlmsearch.cli import main

SEARCH = ["search", "--preset", "tiny", "--corpus", "pydoc", "--steps", "2", "--trials", "2", "--scheduler", "none",
          "--name", "cut", "--quiet"]  # fmt: skip
LADDER = ["ladder", "run", "--points", "tiny:n_layers=4@1", "tiny:n_layers=4,d_model=48,n_heads=3@1", "--name", "lad",
          "--lr-calibration", "off", "--corpus", "pydoc", "--quiet",
          "--profiles", "linear:start=1.5,end=0.5"]  # fmt: skip


def _cut(*_: Any, **__: Any) -> Any:
    raise KeyboardInterrupt


def _interrupted(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 130 and "Traceback" not in err, (code, err)
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    from tlmsearch.tuning import runner

    monkeypatch.setattr(runner, "_start", lambda *a, **k: None)


def test_the_instant_a_search_directory_appears(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], no_ray: None
) -> None:
    from tlmsearch.tuning import runner

    monkeypatch.setattr(runner, "run_lock", _cut)  # the first step after the folder is made
    argv = [*SEARCH, "--runs-dir", str(tmp_path)]
    line = _interrupted(capsys, argv)
    assert line.startswith("tlmsearch search: interrupted; nothing was recorded yet"), line
    assert line.endswith("resume with the same command, tlmsearch " + " ".join(argv)), line
    assert not (tmp_path / "cut").exists()  # the name is free for that command


def test_when_search_yaml_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], no_ray: None
) -> None:
    from tlmsearch.tuning import runner

    monkeypatch.setattr(runner, "write_environment", _cut)  # right after search.yaml
    line = _interrupted(capsys, [*SEARCH, "--runs-dir", str(tmp_path)])
    assert (tmp_path / "cut" / "search.yaml").is_file()
    assert line == f"tlmsearch search: interrupted; resume with: tlmsearch resume {tmp_path / 'cut'}"


def test_between_the_noise_floor_and_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], no_ray: None
) -> None:
    from tlmsearch.tuning import runner

    monkeypatch.setattr(runner, "run_lr_trials", lambda cfg, *a: cfg)
    monkeypatch.setattr(runner, "run_noise_trials", lambda *a: None)  # the noise floor: done
    monkeypatch.setattr(runner, "_new_tuner", _cut)  # the search's Tuner: not yet
    line = _interrupted(capsys, [*SEARCH, "--runs-dir", str(tmp_path)])
    assert line == f"tlmsearch search: interrupted; resume with: tlmsearch resume {tmp_path / 'cut'}"


def test_the_first_instant_of_a_ladder_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tlmsearch.tuning import ladder

    monkeypatch.setattr(ladder, "run_ladder", _cut)  # ladder.yaml saved, nothing trained
    line = _interrupted(capsys, [*LADDER, "--runs-dir", str(tmp_path)])
    assert line == f"tlmsearch ladder: interrupted; resume with: tlmsearch ladder resume {tmp_path / 'lad'}"


def test_before_a_ladder_holds_its_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tlmsearch.ladders.config import LadderConfig

    monkeypatch.setattr(LadderConfig, "save", _cut)  # the folder made, ladder.yaml not yet
    argv = [*LADDER, "--runs-dir", str(tmp_path)]
    line = _interrupted(capsys, argv)
    assert "nothing was recorded yet" in line and line.endswith("tlmsearch " + " ".join(argv)), line
    assert not (tmp_path / "lad").exists()


def test_a_ladder_resume_names_the_ladder_not_its_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tlmsearch.tuning import ladder, runner

    monkeypatch.setattr(ladder, "run_ladder", _cut)
    _interrupted(capsys, [*LADDER, "--runs-dir", str(tmp_path)])
    monkeypatch.undo()
    monkeypatch.setattr(runner, "search_or_resume", _cut)  # inside the first point's search
    line = _interrupted(capsys, ["ladder", "resume", str(tmp_path / "lad"), "--quiet"])
    assert line == f"tlmsearch ladder: interrupted; resume with: tlmsearch ladder resume {tmp_path / 'lad'}"
