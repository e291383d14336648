"""verify --looks: the deciding seeds train in stages through Ray, the decided candidates stop,
verify.json records the design, and the report re-decides the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runs import tiny_search

from tlmsearch.cli import main
from tlmsearch.rundir.layout import VERIFY


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--looks", "1"], "--looks"),
        (["--looks", "2", "--interval", "bootstrap", "--seeds", "20"], "--interval t"),
    ],
)
def test_verify_refuses_bad_sequential_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    from analysis_fakes import search_records, write_run

    run = write_run(tmp_path / "run", search_records())
    assert main(["verify", str(run), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.slow
def test_verify_looks_trains_in_stages_and_says_it_was_sequential(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tiny_search(tmp_path / "runs")
    assert main(["verify", str(run), "--top-k", "1", "--seeds", "4", "--looks", "2", "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "group-sequential: 2 looks at 2, 4 seeds per profile" in out, out
    assert "verify: look 1 of 2 (2 seeds)" in out, out
    doc = json.loads((run / VERIFY).read_text())
    seq = doc["sequential"]
    assert doc["complete"] is True and seq["design"]["looks"] == [2, 4] and seq["seeds"] == [1, 2, 3, 4]
    taken = seq["looks_taken"]
    assert doc["decision_seeds"] == [1, 2, 3, 4][: 2 * taken]
    verified = [json.loads(x) for x in (run / "trials.jsonl").read_text().splitlines()]
    verified = [r for r in verified if r["kind"] == "verify"]
    (group,) = seq["groups"]
    assert len(verified) == group["runs"]  # decided candidates trained no further seeds
    verdict = next(line for line in out.splitlines() if line.startswith("transformer: "))
    assert "repeated-confidence" in verdict, out  # the verdict says it was sequential
    # the report re-decides from verify.json: the same outcome and headline
    assert main(["report", str(run), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert "group-sequential" in summary["verdicts"][0]["headline"]
    assert summary["verdicts"][0]["outcome"] == group["outcome"]
