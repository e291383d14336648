"""The benchmarks' dry runs: each script run end to end on a tiny model, as a smoke test (slow).

They are scripts that manage Ray themselves: bench_early_stopping and bench_overhead reuse a
running Ray or start one and shut it down when they finish (bench_overhead measures Ray's
start-up), bench_parallel and bench_samplers use worker processes and no Ray. The pure parts of
each benchmark are tested in tests/unit/bench.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import bench_early_stopping as es
from bench import bench_overhead as bo
from bench import bench_parallel as bp
from bench import bench_sampler_search as bss
from bench import bench_samplers as bs


@pytest.mark.slow
def test_early_stopping_dry_run_two_real_searches(tmp_path: Path) -> None:
    out = tmp_path / "es.json"
    assert es.main(["--dry", "--out", str(out)]) == 0
    result = json.loads(out.read_text())["result"]
    assert result["trials"] == [6, 6] and result["steps_asha"] <= result["steps_none"] == 6 * 12
    assert result["same_profiles"]  # random sampler, same seed: the same profiles both ways
    assert result["max_abs_diff_same_trial"] < 1e-6  # training is deterministic


@pytest.mark.slow
def test_sampler_search_dry_run_real_searches_and_a_refusal(tmp_path: Path) -> None:
    out = tmp_path / "ss.json"
    args = ["--dry", "--seeds", "1", "--trials", "5", "--combos", "tpexasha,randomxnone,gpxasha", "--out", str(out)]
    assert bss.main([*args, "--log", str(tmp_path / "log.jsonl")]) == 0
    result = json.loads(out.read_text())
    assert {(r["sampler"], r["scheduler"]) for r in result["rows"]} == {("tpe", "asha"), ("random", "none")}
    assert list(result["refused"]) == ["gp x asha"]
    assert all(r["trials"] == 5 and r["full_fidelity"] >= 4 for r in result["rows"])  # baselines always finish


@pytest.mark.slow
def test_overhead_dry_run(tmp_path: Path) -> None:
    out = tmp_path / "overhead.json"
    assert bo.main(["--dry", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 1 and rows[0]["ratio"] > 0


@pytest.mark.slow
def test_parallel_dry_run(tmp_path: Path) -> None:
    out = tmp_path / "parallel.json"
    assert bp.main(["--dry", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    (r,) = result["results"]
    assert len(r["seq_walls"]) == len(r["par_walls"]) == 1 and r["wall_ratio"] > 0


@pytest.mark.slow
def test_samplers_dry_replay_runs_every_sampler_as_the_search_builds_it(tmp_path: Path) -> None:
    out = tmp_path / "samplers.json"
    assert bs.main(["--dry", "--seeds", "1", "--trials", "12", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert {s["sampler"] for s in result["summaries"]} == set(bs.SAMPLERS)
