"""A damaged ladder is read as damaged (issue 50, items 4 and 5), as a study is: a point's folder
deleted, replaced by a file or a link loop, its trials.jsonl deleted, emptied or torn, its state
file not one. `ladder status` answers with one warning naming it, `ladder report` (and
`--readme-table`) refuse in one line and keep the last report, `ladder resume` refuses a point's
folder that is a file before anything trains. Copies of the committed reference ladder, no training."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tlmsearch.cli import main

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "runs/reference/ladder"
POINT = "cpu-xs-t20"


@pytest.fixture
def ladder(tmp_path: Path) -> Path:
    copy = tmp_path / "ladder"
    shutil.copytree(REFERENCE, copy)
    assert main(["ladder", "report", str(copy)]) == 0
    return copy


def _delete(p: Path) -> None:
    shutil.rmtree(p / POINT)


def _file(p: Path) -> None:
    shutil.rmtree(p / POINT)
    (p / POINT).write_text("x")


def _loop(p: Path) -> None:
    shutil.rmtree(p / POINT)
    (p / POINT).symlink_to(f"{POINT}.other")
    (p / f"{POINT}.other").symlink_to(POINT)


def _no_trials(p: Path) -> None:
    (p / POINT / "trials.jsonl").unlink()


def _emptied(p: Path) -> None:
    (p / POINT / "trials.jsonl").write_text("")


def _torn(p: Path) -> None:
    trials = p / POINT / "trials.jsonl"
    data = trials.read_bytes()
    trials.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 40])  # the last record cut mid-line


def _last_lost(p: Path) -> None:
    trials = p / POINT / "trials.jsonl"
    lines = trials.read_text().splitlines(keepends=True)
    trials.write_text("".join(lines[:-1]))  # the last record gone whole


DAMAGE: dict[str, Callable[[Path], None]] = {
    "folder deleted": _delete, "folder a file": _file, "folder a link loop": _loop, "trials deleted": _no_trials,
    "trials emptied": _emptied, "last record torn": _torn, "last record lost": _last_lost,
}  # fmt: skip


def _one_line(capsys: pytest.CaptureFixture[str], code: int, *words: str) -> str:
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, (code, err)
    for w in words:
        assert w in err, err
    return err


def test_the_reference_ladder_is_whole(ladder: Path) -> None:
    from tlmsearch.ladders.files import ladder_damage

    assert ladder_damage(ladder) == []


@pytest.mark.parametrize("how", DAMAGE)
def test_damage_is_said_by_status_and_refused_by_report(
    how: str, ladder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {n: (ladder / n).read_bytes() for n in ("summary.json", "summary.md", "report.html")}
    DAMAGE[how](ladder)
    capsys.readouterr()
    assert main(["ladder", "status", str(ladder)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    warning = [line for line in captured.err.splitlines() if line.strip()]
    assert len(warning) == 1 and warning[0].startswith("warning: ladder") and POINT in warning[0], captured.err
    _one_line(capsys, main(["ladder", "report", str(ladder)]), "is damaged", "last one is kept", POINT)
    _one_line(capsys, main(["ladder", "report", str(ladder), "--readme-table"]), "is damaged")
    assert before == {n: (ladder / n).read_bytes() for n in before}  # the good report kept


@pytest.mark.parametrize("how", ["folder a file", "folder a link loop"])
def test_resume_refuses_a_point_folder_in_the_way(how: str, ladder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    DAMAGE[how](ladder)
    capsys.readouterr()
    _one_line(capsys, main(["ladder", "resume", str(ladder)]), "cannot be resumed", POINT)


@pytest.mark.parametrize(
    "state",
    [
        {"phases": {f"{POINT}/search": "done"}},  # a phase entry that is not an object
        {"phases": {f"{POINT}/search": {"status": 3}}},
        {"phases": []},
        [1, 2],
        "not json",
    ],
)
@pytest.mark.parametrize("action", ["status", "report", "resume"])
def test_a_damaged_state_file_is_one_line(
    state: object, action: str, ladder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ladder / "ladder_state.json"
    path.write_text(state if isinstance(state, str) else json.dumps(state))
    capsys.readouterr()
    _one_line(capsys, main(["ladder", action, str(ladder)]), "ladder_state.json is damaged", "delete it")


def test_a_running_point_is_not_damage(ladder: Path) -> None:
    """A ladder cut before a point's phases are done asks nothing of that point's folder."""
    from tlmsearch.ladders.files import ladder_damage

    state = json.loads((ladder / "ladder_state.json").read_text())
    for phase in ("search", "verify"):
        state["phases"][f"{POINT}/{phase}"] = {"status": "running" if phase == "search" else "pending"}
    (ladder / "ladder_state.json").write_text(json.dumps(state))
    _delete(ladder)
    assert ladder_damage(ladder) == []
    os.mkdir(ladder / POINT)
    assert ladder_damage(ladder) == []
