"""A finished `verify --looks` extended through Ray: refused at the same alpha, then run as a new
stage at a higher --alpha that reuses every run of the first verification, trains only the new
seeds of the candidates still undecided, and says in verify.json, the headline and status what
alpha the whole history spent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runs import tiny_search

from tlmsearch.cli import main
from tlmsearch.rundir.layout import VERIFY


def verify_runs(run: Path) -> list[dict]:
    rows = [json.loads(x) for x in (run / "trials.jsonl").read_text().splitlines()]
    return [r for r in rows if r["kind"] == "verify"]


@pytest.mark.slow
def test_a_finished_verification_extends_as_a_new_stage_through_ray(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tiny_search(tmp_path / "runs")
    # a margin too small to show at 4 seeds keeps the first verification open (inconclusive)
    base = ["verify", str(run), "--top-k", "1", "--no-report", "--margin", "0.0001"]
    assert main([*base, "--seeds", "4", "--looks", "2"]) == 0
    first = json.loads((run / VERIFY).read_text())
    first_runs = {(r["trial_id"]) for r in verify_runs(run)}
    capsys.readouterr()
    assert main([*base, "--seeds", "8", "--looks", "2"]) == 2  # the same alpha again: refused
    assert "would spend it twice" in capsys.readouterr().err
    assert json.loads((run / VERIFY).read_text()) == first
    assert first["sequential"]["groups"][0]["outcome"] == "inconclusive", first["sequential"]["groups"]
    assert main([*base, "--seeds", "8", "--looks", "2", "--alpha", "0.1"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    doc = json.loads((run / VERIFY).read_text())
    seq = doc["sequential"]
    assert seq["design"]["looks"] == [2, 4, 8] and seq["design"]["stages"][0]["end"] == 4
    assert seq["seeds"] == list(range(1, 9)) and "the whole history spends alpha 0.1" in seq["extension"]
    runs = verify_runs(run)
    assert first_runs <= {r["trial_id"] for r in runs}  # the first verification's runs are kept
    assert all(r["seed"] > 4 for r in runs if r["trial_id"] not in first_runs)  # only new seeds trained
    assert "the whole history" in out
    assert main(["status", str(run)]) == 0
    assert "verification: alpha spent by the whole history" in capsys.readouterr().out
