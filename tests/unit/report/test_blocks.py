"""The README's record-table markers: a block is found, filled and checked on its own, even
one just added (its two markers on consecutive lines) before another block of its kind."""

from __future__ import annotations

from tlmsearch.report.blocks import TableBlock

STUDY = TableBlock("study-table", "study")

TEXT = """# Runs

<!-- study-table runs/new -->
<!-- /study-table -->

## Older

<!-- study-table runs/old -->
| a | b |
|---|---|
<!-- /study-table -->
"""


def test_an_unfilled_block_is_found_empty_and_does_not_swallow_the_next_one() -> None:
    assert STUDY.blocks(TEXT) == {"runs/new": "", "runs/old": "| a | b |\n|---|---|"}


def test_filling_one_block_leaves_the_others_and_the_text_around_them() -> None:
    filled = STUDY.fill(TEXT, "row 1\nrow 2", "runs/new")
    assert filled == TEXT.replace(
        "<!-- study-table runs/new -->\n<!-- /study-table -->",
        "<!-- study-table runs/new -->\nrow 1\nrow 2\n<!-- /study-table -->",
    )
    assert STUDY.blocks(filled) == {"runs/new": "row 1\nrow 2", "runs/old": "| a | b |\n|---|---|"}
    again = STUDY.fill(filled, "row 3", "runs/old")
    assert STUDY.blocks(again) == {"runs/new": "row 1\nrow 2", "runs/old": "row 3"}
    assert again.startswith("# Runs\n\n") and "## Older\n" in again


def test_check_names_the_unfilled_block_and_a_drifted_line() -> None:
    assert STUDY.check(TEXT, "row 1", "runs/new") == ["the README's table has 0 lines, the study's 1"]
    assert STUDY.check(TEXT, "| a | b |\n|---|---|", "runs/old") == []
    assert STUDY.check(TEXT, "| a | c |\n|---|---|", "runs/old") == [
        "line 1: README has '| a | b |', the study says '| a | c |'"
    ]
    assert STUDY.check(TEXT, "x", "runs/gone") == [
        "the README has no study table for runs/gone (expected <!-- study-table runs/gone -->)"
    ]
