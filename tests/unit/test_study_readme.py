"""The README's study table is produced from a study's summary.json and checked against it:
on a synthetic study here, on the committed reference study once it exists (issue 17)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from analysis_fakes import search_records, verify_records, write_run

from tlmsearch.cli import main
from tlmsearch.config import DataConfig
from tlmsearch.errors import UserError
from tlmsearch.study_config import StudyConfig
from tlmsearch.study_files import STUDY_CONFIG
from tlmsearch.study_readme import check_readme, read_summary, readme_block, readme_blocks, readme_table
from tlmsearch.study_report import write_study_report

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = "runs/reference/study"


def _study(tmp_path: Path) -> Path:
    """A study of one architecture whose verification records are synthetic (no training)."""
    study = tmp_path / "st"
    study.mkdir()
    StudyConfig(name="st", archs=("transformer",), preset="tiny", model={"n_layers": 4}, seeds=3,
                data=DataConfig(corpus="pydoc")).save(study / STUDY_CONFIG)  # fmt: skip
    write_run(study / "transformer", search_records() + verify_records(seeds=3, winner_gain=0.05))
    (study / "transformer" / "verify.json").write_text(json.dumps({"decision_seeds": [0, 1, 2], "pilot_seeds": []}))
    write_study_report(study)
    return study


def test_the_table_is_rendered_from_the_summary_and_checked_against_a_readme(tmp_path: Path) -> None:
    study = _study(tmp_path)
    summary = read_summary(study)
    table = readme_table(summary)
    outcome = summary["verdicts"]["transformer"]["outcome"]
    assert f"| transformer | {outcome} | 3 |" in table
    assert summary["answer"] in table and "preset tiny" in table
    for row in summary["cross_table"]:
        assert f"| {row['label']} |" in table
    readme = f"# Project\n\nSome text.\n\n{readme_block(summary, 'runs/st')}\n\nMore text.\n"
    assert readme_blocks(readme) == {"runs/st": table}
    assert check_readme(readme, summary, "runs/st") == []
    gain = next(line for line in table.splitlines() if line.startswith("| uniform |"))
    edited = readme.replace(gain, gain.replace("%", "0%", 1))
    problems = check_readme(edited, summary, "runs/st")
    assert len(problems) == 1 and "| uniform |" in problems[0]
    assert check_readme(readme, summary, "runs/other") == [
        "the README has no study table for runs/other (expected <!-- study-table runs/other -->)"
    ]


def test_the_command_prints_the_block(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    study = _study(tmp_path)
    assert main(["study", "--readme-table", str(study)]) == 0
    out = capsys.readouterr().out
    assert out.strip() == readme_block(read_summary(study), str(study))
    with pytest.raises(UserError, match="has no summary.json"):
        read_summary(tmp_path)
    assert main(["study", "--readme-table", str(tmp_path)]) == 2


@pytest.mark.skipif(
    not (ROOT / REFERENCE / "summary.json").is_file(),
    reason=f"the reference study is not committed yet ({REFERENCE}/summary.json, issue 17)",
)
def test_the_readme_agrees_with_the_committed_reference_study() -> None:
    summary = read_summary(ROOT / REFERENCE)
    problems = check_readme((ROOT / "README.md").read_text(), summary, REFERENCE)
    assert problems == [], "README differs from the study; regenerate with `tlmsearch study --readme-table "
    f"{REFERENCE}`:\n" + "\n".join(problems)
