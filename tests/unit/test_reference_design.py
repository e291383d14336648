"""The committed reference answer is measured where its question lives: read from the records
themselves (not from what a config meant to train), every run of the fixed-depth ladder, the
four-architecture study and the positive controls has 8 layers, the depth arm's points hold depth
as the one thing that moves (the same d_model and heads, non-embedding parameters within 5 %),
every run stays under one epoch of its corpus, and no two names of one verification trained the
same model (a candidate built by two names is trained once, under one)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tlmsearch.ladders.report import ladder_summary

ROOT = Path(__file__).resolve().parents[2]
AT_EIGHT = ("ladder8", "arch8", "control8", "control8-late")  # the answer at fixed depth
DEPTH = "depth"  # equal parameters, depth moves
RUNS = sorted(  # every folder that has trained something (a point not begun has no record yet)
    p.parent.relative_to(ROOT / "runs/reference").as_posix()
    for name in (*AT_EIGHT, DEPTH)
    for p in (ROOT / "runs/reference" / name).rglob("trials.jsonl")
    if p.read_text().strip()
)


def _records(run: str) -> list[dict[str, Any]]:
    lines = (ROOT / "runs/reference" / run / "trials.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_every_part_of_the_answer_has_records() -> None:
    parts = {run.split("/")[0] for run in RUNS}
    assert parts == {*AT_EIGHT, DEPTH}, parts
    assert len(RUNS) >= 10  # 2+ ladder points, 3+ depth points, 4 architectures, 2 controls


@pytest.mark.parametrize("run", RUNS)
def test_depth_and_epochs_as_the_records_hold_them(run: str) -> None:
    records = _records(run)
    layers = {r["budget"]["n_layers"] for r in records}
    assert {len(r["widths"]) for r in records} == layers  # one width a layer, as trained
    if run.split("/")[0] == DEPTH:
        assert len(layers) == 1 and layers <= {4, 8, 12, 16}, layers
    else:
        assert layers == {8}, f"{run}: {layers}"
    epochs = max(r["curve"][-1]["epochs"] for r in records if r.get("curve"))
    assert 0 < epochs < 1, f"{run}: {epochs} epochs"


def _verified(run: str) -> list[dict[str, Any]]:
    return [r for r in _records(run) if r["kind"] in ("verify", "compare")]


VERIFIED = [run for run in RUNS if _verified(run)]  # a point still calibrating has none yet


def test_the_verified_runs_are_the_answers() -> None:
    assert len(VERIFIED) >= 9 and {run.split("/")[0] for run in VERIFIED} == {*AT_EIGHT, DEPTH}, VERIFIED


@pytest.mark.parametrize("run", VERIFIED)
def test_no_two_names_of_one_verification_trained_the_same_model(run: str) -> None:
    names: dict[tuple[int, ...], set[str]] = defaultdict(set)
    for r in _verified(run):
        names[tuple(r["widths"])].add(json.dumps(r["profile"], sort_keys=True))
    assert all(len(v) == 1 for v in names.values()), {k: v for k, v in names.items() if len(v) > 1}


def test_the_depth_arm_moves_depth_alone() -> None:
    points = ladder_summary(ROOT / "runs/reference" / DEPTH)["points"]
    assert [p["n_layers"] for p in points] == [4, 8, 12, 16]
    assert {p["d_model"] for p in points} == {32} and {p["n_heads"] for p in points} == {2}
    assert {p["tokens_per_param"] for p in points} == {20}
    sizes = [p["non_embedding"] for p in points]
    assert max(sizes) / min(sizes) < 1.05 and 0.09e6 < min(sizes) < 0.12e6, sizes


def test_the_ladder_spans_about_sixteen_times_at_one_depth() -> None:
    points = ladder_summary(ROOT / "runs/reference/ladder8")["points"]
    assert {p["n_layers"] for p in points} == {8} and len(points) >= 4
    assert {p["tokens_per_param"] for p in points} == {20}
    sizes = [p["non_embedding"] for p in points]
    # 26,896 -> 427,072: 15.9x, the points the issue itself priced as "16x"
    assert sizes == sorted(sizes) and sizes[-1] / sizes[0] > 15.8, sizes
