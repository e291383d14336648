"""`tlmsearch verify` on a run whose verification is finished: asking for more seeds at the same
alpha (a re-planned --seeds/--looks, a larger --max-seeds) is refused in one line before anything
trains, and verify.json is left as it was (alpha spent once; `analysis.sequential_extend`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from analysis_fakes import search_records, write_run

from tlmsearch.cli import main
from tlmsearch.rundir.layout import VERIFY

SEQUENTIAL = {
    "steps": 40,
    "pilot_seeds": [],
    "decision_seeds": [1, 2, 3, 4],
    "plan": None,
    "margin": 0.01,
    "alpha": 0.05,
    "complete": True,
    "sequential": {
        "design": {"looks": [2, 4], "margin": 0.01, "alpha": 0.05, "spending": "obf"},
        "seeds": [1, 2, 3, 4],
        "looks_taken": 2,
        "groups": [],
    },
}
FIXED = {"steps": 40, "pilot_seeds": [], "decision_seeds": [1, 2, 3, 4, 5], "plan": None, "margin": 0.01,
         "alpha": 0.05, "complete": True}  # fmt: skip


@pytest.mark.parametrize(
    ("doc", "flags"),
    [
        (SEQUENTIAL, ["--seeds", "12", "--looks", "3"]),  # the joint study's re-planning (looks 4, 8, 12)
        (SEQUENTIAL, ["--seeds", "12"]),  # a fixed plan over the same seeds, more of them
        (FIXED, ["--seeds", "9"]),  # a fixed verification re-run with more seeds
    ],
)
def test_extending_a_finished_verification_at_the_same_alpha_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict, flags: list[str]
) -> None:
    run = write_run(tmp_path / "run", search_records())
    (run / VERIFY).write_text(json.dumps(doc))
    before = (run / "trials.jsonl").read_text()
    assert main(["verify", str(run), "--steps", "40", *flags, "--no-report"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "would spend it twice" in err and "--alpha 0.1" in err, err
    assert json.loads((run / VERIFY).read_text()) == doc  # verify.json as it was
    assert (run / "trials.jsonl").read_text() == before  # nothing trained


def test_an_extension_on_other_seeds_is_refused_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", search_records())
    (run / VERIFY).write_text(json.dumps(FIXED))
    assert main(["verify", str(run), "--steps", "40", "--seeds", "9", "--seed", "100", "--alpha", "0.1"]) == 2
    err = capsys.readouterr().err
    assert "do not continue them" in err and "Traceback" not in err, err
