"""`tlmsearch compare --reference SPEC` end to end at the tiny preset: a reference that starves the
last layer (8 of 256 MLP units) is trained beside the compared profiles, every candidate is compared
with it, and the verdict, its headline, compare.json and the report's summary name it.

Slow: a local Ray and 6 short trainings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tlmsearch.cli import main

pytestmark = [pytest.mark.usefixtures("ray_session"), pytest.mark.slow]

STARVED = "free:l0=1,l1=1,l2=1,l3=-3"  # widths 88, 80, 80, 8 at tiny with 4 layers


def test_compare_with_a_starving_reference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "compare", "--preset", "tiny", "--model", "n_layers=4", "--families", "uniform", "cosine",
        "--reference", STARVED, "--seeds", "2", "--steps", "4", "--eval-interval", "2", "--corpus", "pydoc",
        "--name", "ref", "--runs-dir", str(tmp_path), "--json",
    ]  # fmt: skip
    assert main(argv) == 0
    (v,) = json.loads(capsys.readouterr().out)
    assert v["cosine"] == STARVED and v["reference"] == STARVED and v["n_candidates"] == 2
    assert f"than {STARVED}" in v["headline"] or v["headline"].startswith(f"{STARVED} ")
    assert {c["reference"] for c in v["comparisons"]} >= {STARVED}
    run = tmp_path / "ref"
    records = [json.loads(x) for x in (run / "trials.jsonl").read_text().splitlines()]
    assert sorted((r["profile"]["family"], r["seed"]) for r in records) == sorted(
        (f, s) for f in ("uniform", "cosine", "free") for s in (0, 1)
    )
    assert {tuple(r["widths"]) for r in records if r["profile"]["family"] == "free"} == {(88, 80, 80, 8)}
    assert json.loads((run / "compare.json").read_text())["reference"] == STARVED
    (reported,) = json.loads((run / "summary.json").read_text())["verdicts"]
    assert reported["reference"] == STARVED and reported["headline"] == v["headline"]
