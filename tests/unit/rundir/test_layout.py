"""A run directory of an older layout (records without the layout mark, or with a smaller one)
is one line from every command that reads it: what it is, which tlmsearch wrote it, what to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from analysis_fakes import record, search_records, write_run

from tlmsearch.cli import main
from tlmsearch.rundir.records import RUN_LAYOUT, LayoutError, read_records


def _older(run: Path, layout: int | None) -> None:
    """Rewrite the run's records as an older tlmsearch wrote them (no mark: layout 1)."""
    path = run / "trials.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row.pop("layout")
        if layout is not None:
            row["layout"] = layout
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_the_current_layout_reads(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", search_records())
    assert {json.loads(line)["layout"] for line in (run / "trials.jsonl").read_text().splitlines()} == {RUN_LAYOUT}
    assert len(read_records(run)) == len(search_records())


@pytest.mark.parametrize("command", ["status", "report", "export"])
def test_every_command_says_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    run = write_run(tmp_path / "run", search_records())
    _older(run, None)
    rc = main([command, str(run)] + (["--stdout"] if command == "export" else []))
    out, err = capsys.readouterr()
    assert rc == 2 and "Traceback" not in out + err
    line = err.strip()
    assert len(line.splitlines()) == 1, line
    assert f"{run}: a run directory of layout 1, written by tlmsearch 0.1.0" in line
    assert "open it with that tlmsearch, or start a new run" in line


def test_a_file_appended_to_by_an_older_tlmsearch_is_refused(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", search_records())
    old = {**record("late", "uniform", 2.0), "model": {}}
    with (run / "trials.jsonl").open("a") as f:
        f.write(json.dumps(old) + "\n")
    with pytest.raises(LayoutError, match="layout 1"):
        read_records(run)


def test_a_layout_from_a_newer_tlmsearch_is_refused(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", search_records())
    _older(run, RUN_LAYOUT + 1)
    with pytest.raises(LayoutError, match=f"layout {RUN_LAYOUT + 1}, not one this tlmsearch wrote"):
        read_records(run)
