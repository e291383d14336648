"""The verdict of a committed run, read from its records as `tlmsearch status` reads them (one
verdict: a run of one architecture and one budget)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tlmsearch.analysis.summary import summarize
from tlmsearch.report.run import load_run
from tlmsearch.rundir.io import read_verify


def committed_verdict(run: Path) -> dict[str, Any]:
    records, config = load_run(run)
    (v,) = summarize(records, config, verify_plan=read_verify(run))["verdicts"]
    return v
