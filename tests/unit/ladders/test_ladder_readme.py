"""The README's ladder table is rendered from the committed reference ladder's records and
checked against them; a drifted line, a missing block and a point still calibrating show."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tlmsearch.cli import main
from tlmsearch.ladders.readme import MARKERS, check_readme, readme_block, readme_table
from tlmsearch.ladders.report import ladder_summary

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = "runs/reference/ladder"  # history: its table is in runs/reference/README.md
ANSWER = "runs/reference/ladder8"  # the README's answer: the ladder at 8 layers
DEPTH = "runs/reference/depth"  # the README's depth arm


@pytest.fixture(scope="module")
def summary() -> dict:
    return ladder_summary(ROOT / REFERENCE)


@pytest.mark.parametrize(
    ("doc", "ladder"),
    [("runs/reference/README.md", REFERENCE), ("README.md", ANSWER), ("runs/reference/README.md", DEPTH)],
)
def test_the_docs_agree_with_the_committed_ladders(doc: str, ladder: str) -> None:
    problems = check_readme((ROOT / doc).read_text(), ladder_summary(ROOT / ladder), ladder)
    assert problems == [], (
        f"{doc} differs from the ladder's records; regenerate with `python tests/helpers/doc_blocks.py` "
        f"(or see `tlmsearch ladder report {ladder} --readme-table`):\n" + "\n".join(problems)
    )


def test_a_drifted_line_or_a_missing_block_is_named(summary: dict) -> None:
    block = readme_block(summary, REFERENCE)
    text = f"# README\n\n{block}\n"
    assert check_readme(text, summary, REFERENCE) == []
    first_row = next(line for line in block.splitlines() if line.startswith("| cpu-xs"))
    drifted = text.replace(first_row, first_row.replace("| 20 |", "| 21 |", 1))
    assert drifted != text
    problems = check_readme(drifted, summary, REFERENCE)
    assert len(problems) == 1 and "README has" in problems[0] and "| 21 |" in problems[0]
    shorter = text.replace(first_row + "\n", "")
    assert any("lines" in p for p in check_readme(shorter, summary, REFERENCE))
    assert check_readme("# README\n", summary, REFERENCE) == [
        f"the README has no ladder table for {REFERENCE} (expected {MARKERS.start(REFERENCE)})"
    ]


def test_the_table_says_what_the_ladder_is_and_shows_every_point(summary: dict) -> None:
    table = readme_table(summary)
    assert table.splitlines()[0].startswith(f"Ladder `{summary['ladder']}` ({summary['arch']}): ")
    assert summary["conclusion"] in table
    for point in summary["points"]:
        assert f"| {point['point']} | {point['non_embedding']:,} |" in table


@pytest.mark.slow
def test_a_point_still_calibrating_shows_no_learning_rate(tmp_path: Path) -> None:
    """A point whose learning-rate calibration has not chosen a rate shows "-", not the rate it
    was configured with (which the calibration may replace)."""
    copy = tmp_path / "ladder"
    shutil.copytree(ROOT / REFERENCE, copy, ignore=shutil.ignore_patterns("tune", "fixed", "*.lock"))
    first = ladder_summary(copy)["points"][0]
    assert first["lr"] is not None
    (copy / first["name"] / "lr_calibration.json").unlink()
    again = ladder_summary(copy)["points"][0]
    assert again["lr"] is None
    shape = f"| {first['point']} | {first['non_embedding']:,} | 2 | 32 | 4 | 20 | "  # layers, d_model, heads, length
    assert shape in readme_table(ladder_summary(copy))
    row = next(r for r in readme_table(ladder_summary(copy)).splitlines() if r.startswith(f"| {first['point']} |"))
    assert row.split(" | ")[8] == "-"


def test_the_cli_prints_the_block_and_refuses_a_folder_that_is_no_ladder(
    summary: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ladder", "report", str(ROOT / REFERENCE), "--readme-table"]) == 0
    out = capsys.readouterr().out.strip()
    assert out == readme_block(summary, str(ROOT / REFERENCE))
    assert main(["ladder", "report", str(tmp_path), "--readme-table"]) == 2
    assert "not a ladder" in capsys.readouterr().err


def test_a_depth_arms_table_asks_about_depth_and_extrapolates_nothing() -> None:
    table = readme_table(ladder_summary(ROOT / DEPTH))
    assert "**Does cosine's standing change with depth?**" in table and "as the model grows" not in table
    assert "| profile | slope per doubling of depth | trend (Holm) |" in table
    compute = readme_table(ladder_summary(ROOT / ANSWER))
    assert "**Does cosine's gain hold as the model grows?**" in compute
    assert "| profile | slope per 10x compute | at 440m | trend (Holm) |" in compute
