"""Hostile input to `report`, `status` and `study --readme-table`: a damaged study is refused
(its last report kept), a folder where a report file belongs is one clear line with no
temporary file left, a damaged or foreign summary.json is one line, a file where a run
directory belongs is named for what it is. Studies are copies of the committed reference study
(no checkpoints: copying is fast), runs are synthetic (`analysis_fakes`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from analysis_fakes import search_records, verify_records, write_run

from tlmsearch.cli import main
from tlmsearch.errors import UserError
from tlmsearch.rundir.io import write_text
from tlmsearch.studies.files import STUDY_STATE, study_damage

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "runs" / "reference" / "study"
REPORT_FILES = ("summary.json", "summary.md", "report.html")

needs_reference = pytest.mark.skipif(
    not (REFERENCE / "summary.json").is_file(), reason=f"the reference study is not committed ({REFERENCE})"
)


def _copy(tmp_path: Path) -> Path:
    study = tmp_path / "study"
    shutil.copytree(REFERENCE, study)
    return study


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _gone(study: Path) -> None:
    shutil.rmtree(study / "titans")


def _emptied(study: Path) -> None:
    (study / "titans" / "trials.jsonl").write_text("")


def _a_file(study: Path) -> None:
    shutil.rmtree(study / "titans")
    (study / "titans").write_text("not a folder\n")


def _config_a_folder(study: Path) -> None:
    (study / "titans" / "search.yaml").unlink()
    (study / "titans" / "search.yaml").mkdir()


def _verify_records_gone(study: Path) -> None:
    path = study / "titans" / "trials.jsonl"
    kept = [line for line in path.read_text().splitlines() if json.loads(line)["kind"] != "verify"]
    path.write_text("\n".join(kept) + "\n")


def _transfer_gone(study: Path) -> None:
    shutil.rmtree(study / "transfer-titans")


DAMAGE: dict[str, tuple[Callable[[Path], None], str, str]] = {
    # name: (the damage, the path the message names, what it says of it)
    "folder gone": (_gone, "titans", "is missing"),
    "records emptied": (_emptied, "titans/trials.jsonl", "holds none of the search's trial records"),
    "folder is a file": (_a_file, "titans", "is a file"),
    "config is a folder": (_config_a_folder, "titans/search.yaml", "is a folder, not a file"),
    "verify records gone": (_verify_records_gone, "titans/trials.jsonl", "holds none of the verification's records"),
    "transfer gone": (_transfer_gone, "transfer-titans", "is missing"),
}


@needs_reference
@pytest.mark.parametrize("case", list(DAMAGE))
def test_report_refuses_a_damaged_study_and_keeps_its_last_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    study = _copy(tmp_path)
    before = {name: (study / name).read_bytes() for name in REPORT_FILES}
    damage, where, says = DAMAGE[case]
    damage(study)
    assert main(["report", str(study)]) == 2
    line = _one_line_error(capsys)
    assert f"study {study} is damaged" in line and f"{study / where} {says}" in line, line
    assert f"tlmsearch resume {study}" in line  # and what to do about it
    assert {name: (study / name).read_bytes() for name in REPORT_FILES} == before  # nothing overwritten
    assert not list(study.glob("*.tmp"))


@needs_reference
@pytest.mark.parametrize("case", ["folder gone", "folder is a file", "records emptied"])
@pytest.mark.slow
def test_status_says_a_study_is_damaged(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    study = _copy(tmp_path)
    damage, where, says = DAMAGE[case]
    damage(study)
    assert main(["status", str(study)]) == 0
    cap = capsys.readouterr()
    row = next(line for line in cap.out.splitlines() if line.strip().startswith("titans "))
    assert "DAMAGED" in row, cap.out
    assert "answer: not shown: the study is damaged" in cap.out
    assert "inconclusive on transformer" not in cap.out  # no answer computed from damaged records
    assert f"warning: study {study} is damaged" in cap.err and f"{study / where} {says}" in cap.err
    assert "Traceback" not in cap.err
    assert main(["status", str(study), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["damage"]) == 1 and f"{study / where} {says}" in data["damage"][0]


@needs_reference
@pytest.mark.slow
def test_the_healthy_reference_study_has_no_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    study = _copy(tmp_path)
    assert study_damage(study) == []
    assert main(["status", str(study)]) == 0
    cap = capsys.readouterr()
    assert "DAMAGED" not in cap.out and "warning" not in cap.err and "answer: no architecture" in cap.out


@needs_reference
@pytest.mark.slow
def test_a_study_still_running_is_not_damaged_its_later_architectures_have_no_verdict_yet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = _copy(tmp_path)
    for name in ("titans", "hope_attention", *(f"transfer-{a}" for a in ("transformer", "gated_attention"))):
        shutil.rmtree(study / name)
    for name in ("transfer-titans", "transfer-hope_attention"):
        shutil.rmtree(study / name)
    state = json.loads((study / STUDY_STATE).read_text())
    keep = ("transformer/search", "transformer/verify", "gated_attention/search", "gated_attention/verify")
    phases = {k: v for k, v in state["phases"].items() if k in keep}
    phases["titans/search"] = {"status": "running"}  # started: its folder may not exist yet
    (study / STUDY_STATE).write_text(json.dumps({"phases": phases}))
    assert study_damage(study) == []
    assert main(["report", str(study)]) == 0
    summary = json.loads((study / "summary.json").read_text())
    assert set(summary["verdicts"]) == {"transformer", "gated_attention"}
    assert summary["missing_verdicts"] == ["titans", "hope_attention"]
    assert "| titans | no verdict yet |" in (study / "summary.md").read_text()
    assert main(["status", str(study)]) == 0
    cap = capsys.readouterr()
    assert "DAMAGED" not in cap.out and "damaged" not in cap.err


def test_a_folder_where_a_report_file_belongs_is_one_line_and_leaves_no_temporary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "run", search_records() + verify_records())
    out = tmp_path / "out"
    (out / "report.html").mkdir(parents=True)
    assert main(["report", str(run), "--out", str(out)]) == 2
    line = _one_line_error(capsys)
    assert f"{out / 'report.html'} is a folder, not a file" in line
    assert sorted(p.name for p in out.iterdir()) == ["report.html"]  # nothing written, no .tmp left
    assert main(["report", str(run), "--out", str(tmp_path / "good")]) == 0  # elsewhere it works


def test_a_failed_atomic_write_removes_its_temporary_file_and_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_text(tmp_path / "summary.json", "old\n")

    def broken(self: Path, target: Path) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "replace", broken)
    with pytest.raises(OSError, match="No space left"):
        write_text(path, "new\n")
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
    monkeypatch.undo()
    (tmp_path / "folder").mkdir()
    with pytest.raises(UserError, match="is a folder, not a file"):
        write_text(tmp_path / "folder", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "summary.json"]


@needs_reference
@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{bad", "summary.json is damaged (not readable as JSON"),
        ("", "summary.json is damaged (not readable as JSON"),
        ('{"verdicts": 5, "config": "x"}', "summary.json is not a study summary (no key study)"),
        ('{"verdicts": 5, "config": "x", "study": "s"}', "summary.json is not a study summary (config is a string"),
        ("[]", "summary.json is not a study summary (a list, expected an object)"),
    ],
)
def test_readme_table_of_a_damaged_summary_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    study = _copy(tmp_path)
    (study / "summary.json").write_text(text)
    assert main(["study", "--readme-table", str(study)]) == 2
    line = _one_line_error(capsys)
    assert says in line and f"rebuild it with `tlmsearch report {study}`" in line, line


@needs_reference
def test_readme_table_of_a_summary_with_broken_rows_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = _copy(tmp_path)
    summary = json.loads((study / "summary.json").read_text())
    summary["cross_table"] = [{"no": "label"}]
    (study / "summary.json").write_text(json.dumps(summary))
    assert main(["study", "--readme-table", str(study)]) == 2
    assert "is not a study summary (its tables cannot be read" in _one_line_error(capsys)


def test_readme_table_of_a_search_run_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", search_records() + verify_records())
    assert main(["report", str(run)]) == 0  # a search run's summary.json: not a study's
    capsys.readouterr()
    assert main(["study", "--readme-table", str(run)]) == 2
    line = _one_line_error(capsys)
    assert f"{run} is not a study directory (no study.yaml)" in line


def test_a_file_where_a_run_directory_belongs_is_named_for_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x\n")
    for command in ("report", "status"):
        assert main([command, str(plain)]) == 2
        line = _one_line_error(capsys)
        assert f"{str(plain)!r} is a file, not a directory" in line and "does not exist" not in line, line
    assert main(["status", str(tmp_path / "missing")]) == 2
    assert "does not exist" in _one_line_error(capsys)


def test_a_search_yaml_that_is_a_folder_is_named_for_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "run", search_records())
    (run / "search.yaml").unlink()
    (run / "search.yaml").mkdir()
    assert main(["status", str(run)]) == 2
    line = _one_line_error(capsys)
    assert f"{run / 'search.yaml'} is a folder, not a file" in line and "no search.yaml" not in line
