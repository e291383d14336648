"""What a ladder says is left: a lower bound, said as one, while a point's seeds are not planned.

On a copy of the committed 8-layer ladder (no training): with its largest point not begun, that
point counts the fewest runs its seed setting allows (its pilot plans the rest), so the line says
"at least" and names why; a point whose verification planned its seeds counts them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tlmsearch.ladders.files import time_left, time_left_line

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "runs/reference/ladder8"
THIRD = "cpu-xs-d_model48-n_heads3-base_width144-n_layers8-t20"
FOURTH = "cpu-xs-n_layers8-t20"


@pytest.fixture
def ladder(tmp_path: Path) -> Path:
    copy = tmp_path / "ladder8"
    shutil.copytree(REFERENCE, copy)
    shutil.rmtree(copy / FOURTH, ignore_errors=True)  # the largest point not begun
    return copy


def test_a_point_not_begun_makes_the_totals_lower_bounds(ladder: Path) -> None:
    left = time_left(ladder)
    assert left["unplanned"] == 1
    line = time_left_line(left)
    assert f"/{left['runs_planned']}+ runs; left: at least about " in line
    tail = "(summed over runs; 1 point counts the fewest runs its seed setting allows until its pilot plans them)"
    assert line.endswith(tail)


def test_a_point_whose_verification_has_not_planned_its_seeds_counts_too(ladder: Path) -> None:
    third = ladder / THIRD
    (third / "verify.json").unlink()
    lines = (third / "trials.jsonl").read_text().splitlines()
    (third / "trials.jsonl").write_text("".join(f"{x}\n" for x in lines if json.loads(x)["kind"] != "verify"))
    assert time_left(ladder)["unplanned"] == 2


@pytest.mark.parametrize(
    ("left", "line"),
    [
        ({"runs_done": 12, "runs_planned": 30, "run_seconds_left": 252.0, "unplanned": 0},
         "12/30 runs; left: about 4.2 min of run time (summed over runs)"),
        ({"runs_done": 12, "runs_planned": 30, "run_seconds_left": None, "unplanned": 0},
         "12/30 runs; left: unknown until a run has ended (summed over runs)"),
        ({"runs_done": 12, "runs_planned": 30, "run_seconds_left": 252.0, "unplanned": 2},
         "12/30+ runs; left: at least about 4.2 min of run time (summed over runs; 2 points count the fewest runs "
         "their seed setting allows until their pilot plans them)"),
        ({"runs_done": 3, "runs_planned": 3, "run_seconds_left": 0.0},  # an older caller's dict
         "3/3 runs; left: about 0.0 min of run time (summed over runs)"),
    ],
)  # fmt: skip
def test_the_line(left: dict, line: str) -> None:
    assert time_left_line(left) == line
