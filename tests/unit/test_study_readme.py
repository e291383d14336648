"""The README's study table is produced from a study's summary.json and checked against it:
on a synthetic study here, on the committed reference study once it exists (issue 17)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from analysis_fakes import search_records, verify_records, write_run

from tlmsearch.cli import main
from tlmsearch.configs.study import StudyConfig
from tlmsearch.core.base import DataConfig
from tlmsearch.errors import UserError
from tlmsearch.studies.files import STUDY_CONFIG
from tlmsearch.studies.readme import check_readme, read_summary, readme_block, readme_blocks, readme_table
from tlmsearch.studies.report import write_study_report

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = "runs/reference/study"


def _study(tmp_path: Path) -> Path:
    """A study of one architecture whose verification records are synthetic (no training)."""
    study = tmp_path / "st"
    study.mkdir()
    StudyConfig.from_flat(dict(name="st", archs=("transformer",), preset="tiny", model={"n_layers": 4}, seeds=3,
                data=DataConfig(corpus="pydoc"))).save(study / STUDY_CONFIG)  # fmt: skip
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
    assert summary["answer"] in table
    assert "preset tiny with n_layers=4, 16 search trials each of 5 tokens per parameter" in table
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
def test_the_docs_agree_with_the_committed_reference_study() -> None:
    summary = read_summary(ROOT / REFERENCE)
    problems = check_readme((ROOT / "docs" / "concepts.md").read_text(), summary, REFERENCE)
    assert problems == [], (
        f"docs/concepts.md differs from the study; regenerate with `tlmsearch study --readme-table {REFERENCE}`:\n"
        + "\n".join(problems)
    )


# the committed studies whose tables runs/reference/README.md holds: the four architectures at 8
# layers (issue 52, the answer) and at 2 layers, 20 tokens per parameter (issue 27, history)
COMMITTED_STUDIES = ["runs/reference/arch8", "runs/reference/study20"]


@pytest.mark.parametrize("study", COMMITTED_STUDIES)
def test_the_reference_readme_agrees_with_each_committed_study(study: str) -> None:
    assert (ROOT / study / "summary.json").is_file(), f"{study} has no summary.json: run `tlmsearch report {study}`"
    summary = read_summary(ROOT / study)
    problems = check_readme((ROOT / "runs" / "reference" / "README.md").read_text(), summary, study)
    assert problems == [], (
        "runs/reference/README.md differs from the study; regenerate with `python tests/helpers/doc_blocks.py`:\n"
        + "\n".join(problems)
    )


def _close(a: object, b: object) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-12)
    return a == b


LONG = "knots:k0=1.9130240708769255,k1=0.4526756343268718"  # its own model: (104, 80, 48, 24) at 4 layers


def test_profile_numbers_read_short_unless_that_would_merge_two_profiles(tmp_path: Path) -> None:
    from analysis_fakes import record

    from tlmsearch.analysis.collect import brief_text
    from tlmsearch.studies.report import shortener

    assert brief_text(f"{LONG} gains +1.53% [-4.00%, +7.38%]") == "knots:k0=1.91,k1=0.453 gains +1.53% [-4.00%, +7.38%]"
    assert brief_text("cosine:start=1.5,end=0.5 k0=2.5e-05 x=0.12345678e-3") == (
        "cosine:start=1.5,end=0.5 k0=2.5e-05 x=0.000123"
    )
    study = _study(tmp_path)
    recs = [json.loads(x) for x in (study / "transformer" / "trials.jsonl").read_text().splitlines()]
    recs += [record(f"v-long-{s}", LONG, 2.26 + 0.01 * s, kind="verify", seed=s) for s in range(3)]
    write_run(study / "transformer", recs)
    write_study_report(study)
    summary = read_summary(study)
    assert LONG in {row["label"] for row in summary["cross_table"]}  # the data keeps the exact spec
    table, md = readme_table(summary), (study / "summary.md").read_text()
    for text in (table, md, (study / "report.html").read_text()):
        assert "knots:k0=1.91,k1=0.453" in text and LONG not in text
    assert "shown to 3 significant digits; summary.json holds their exact specs" in md
    # two profiles that would read alike keep their exact texts
    twin = {"label": LONG.replace("69255", "69256"), "cells": {}}
    close = {**summary, "cross_table": [*summary["cross_table"], twin]}
    assert shortener(close)(LONG) == LONG and shortener(summary)(LONG) == "knots:k0=1.91,k1=0.453"


def test_a_verification_still_running_has_no_verdict_in_the_study_report(tmp_path: Path) -> None:
    from tlmsearch.studies.files import set_phase

    study = _study(tmp_path)
    assert read_summary(study)["verdicts"]["transformer"]["n_seeds"] == 3
    set_phase(study, "transformer/verify", "running")  # e.g. its pilot's records only, so far
    write_study_report(study)
    summary = read_summary(study)
    assert summary["verdicts"] == {} and summary["missing_verdicts"] == ["transformer"]
    assert "| transformer | no verdict yet |" in readme_table(summary)
    md = (study / "summary.md").read_text()
    assert "| transformer: no verdict yet |" in md and "None" not in md  # the transfer matrix's row
    set_phase(study, "transformer/verify", "done", outcome="better")
    write_study_report(study)
    assert read_summary(study)["verdicts"]["transformer"]["n_seeds"] == 3


@pytest.mark.parametrize("where", [REFERENCE, *COMMITTED_STUDIES])
@pytest.mark.slow
def test_the_committed_summary_is_what_the_committed_records_give(tmp_path: Path, where: str) -> None:
    """summary.json (and so the README's table) is rebuilt from the study's trial records and
    verify plans by today's code: a changed analysis or a hand-edited summary shows here."""
    import shutil

    if not (ROOT / where / "summary.json").is_file():
        pytest.skip(f"the study is not committed yet ({where}/summary.json)")
    copy = tmp_path / "study"
    shutil.copytree(ROOT / where, copy)
    for name in ("summary.json", "summary.md", "report.html"):
        (copy / name).unlink()
    write_study_report(copy)
    rebuilt, committed = read_summary(copy), read_summary(ROOT / where)
    assert _close(rebuilt, committed)  # floats to 1e-9: another numpy/scipy build may round differently
    assert set(committed["verdicts"]) == set(committed["config"]["archs"]) and not committed["missing_verdicts"]
    assert (copy / "summary.md").read_text() == (ROOT / where / "summary.md").read_text()
