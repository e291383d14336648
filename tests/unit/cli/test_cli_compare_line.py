"""`tlmsearch compare`'s closing line never calls failed runs complete: it counts the complete and
the failed runs and gives the first failure's reason (exit status 3 when every run failed)."""

from __future__ import annotations

from pathlib import Path

from analysis_fakes import record

from tlmsearch.cli.compare import compare_line
from tlmsearch.rundir.records import TrialRecord


def _records(statuses: list[str]) -> list[TrialRecord]:
    out = []
    for i, status in enumerate(statuses):
        data = record(f"c{i}", "uniform", 2.3, kind="compare", seed=i, status=status)
        if status == "failed":
            data["reason"] = "ConfigError: pack member 1 differs from member 0 in model.attn_heads\nmore"
        out.append(TrialRecord.from_dict(data))
    return out


def test_all_complete() -> None:
    line = compare_line(["uniform", "cosine"], [1, 2], _records(["complete"] * 4), Path("runs/c"))
    assert line == "compare: 2 profiles x 2 seeds, 4 complete -> runs/c"


def test_failed_runs_are_counted_and_the_first_reason_given() -> None:
    line = compare_line(["uniform", "cosine"], [1, 2], _records(["failed"] * 4), Path("runs/c"))
    head, detail = line.splitlines()
    assert head == "compare: 2 profiles x 2 seeds, 0 complete, 4 failed -> runs/c"
    assert detail == (
        "  4 failed; the first, uniform seed 0: ConfigError: pack member 1 differs from member 0 in model.attn_heads"
    )
    mixed = compare_line(["uniform"], [0, 1, 2], _records(["complete", "stopped", "failed"]), Path("r"))
    assert mixed.splitlines()[0] == "compare: 1 profiles x 3 seeds, 1 complete, 1 stopped, 1 failed -> r"
