"""`tlmsearch ladder` end to end at tiny sizes: two points, cosine, uniform and linear with two
paired seeds; the report's (descriptive) trend and extrapolation; then a SIGKILL of the whole process group
in the middle of a point's verification and `tlmsearch ladder resume`: the records equal the
uninterrupted ladder's (same runs, same losses: training is deterministic), none twice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from cli_runs import kill_group, reaped

from tlmsearch.ladders.config import LadderConfig
from tlmsearch.rundir.records import read_records

pytestmark = pytest.mark.slow

POINTS = ("tiny:n_layers=4@0.25", "tiny:n_layers=4,d_model=48,n_heads=3,base_width=96@0.25")  # one depth, head size 16


def tiny(tmp_path: Path, name: str = "lad") -> LadderConfig:
    return LadderConfig.from_dict(
        {
            "name": name,
            "runs_dir": str(tmp_path),
            "points": list(POINTS),
            "profiles": ["linear:start=1.5,end=0.5"],
            "seeds": 2,
            "target": "340m",
            "lr_calibration": "off",
            "cpus_per_trial": 2,  # one trial (one Ray worker) at a time, one thread: less start-up
            "train": {"threads": 1, "batch_size": 4, "eval_interval": 20, "eval_windows": 4, "warmup_steps": 2},
            "data": {"corpus": "pydoc"},
        }
    )


def _losses(run: Path) -> dict:
    """(point, kind, profile, seed) -> val_loss of every record; Counter of the keys (nothing twice)."""
    out: dict = {}
    keys: Counter = Counter()
    for sub in sorted(p for p in run.iterdir() if (p / "trials.jsonl").is_file()):
        for r in read_records(sub):
            key = (sub.name, r.kind, json.dumps(r.profile, sort_keys=True), r.seed)
            keys[key] += 1
            out[key] = round(r.metric("val_loss"), 6)
    assert max(keys.values()) == 1, keys
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import ray

    from tlmsearch import ladder

    tmp = tmp_path_factory.mktemp("ladder")
    result = ladder(tiny(tmp), progress=False)
    ray.shutdown()  # the kill/resume run starts its own local Ray in subprocesses
    return result.run_dir


def test_ladder_end_to_end(reference: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tlmsearch.cli import main

    s = json.loads((reference / "summary.json").read_text())
    assert [p["point"] for p in s["points"]] == list(POINTS)
    for p in s["points"]:
        assert p["outcome"] in ("better", "near_optimal", "inconclusive")
        assert p["gains"]["cosine"]["uniform"]["n"] == 2 and p["compute"] > 0
    assert s["points"][1]["compute"] > s["points"][0]["compute"]
    trend = s["trends"]["uniform"]["cosine"]
    assert trend["n_points"] == 2 and trend["descriptive"] and not trend["shown"]
    assert trend["slope_per_decade"]["low"] is None is trend["slope_per_decade"]["high"]  # 2 points: no interval
    ext = trend["extrapolation"]
    assert ext["target"] == "340m" and ext["decades_beyond"] > 5
    assert "from 2 points over" in ext["reach"] and "extrapolation, not a measurement" in ext["reach"]
    assert s["conclusion"].startswith("cosine over uniform: ") and "340m" in s["conclusion"]
    losses = _losses(reference)
    assert sum(k[1] == "verify" for k in losses) == 2 * 3 * 2  # points x profiles x seeds
    from tlmsearch.cli.ladder import best_profile

    point = reference / "tiny-n_layers4-t0.25"
    row = [p for p in s["points"] if p["name"] == point.name][0]
    assert best_profile(str(point), "transformer") == row["best"]  # --best-from: the verified best
    assert row["best"] in {"uniform", "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5"}
    assert main(["ladder", "status", str(reference)]) == 0
    capsys.readouterr()
    assert main(["status", str(reference)]) == 0  # the general status knows a ladder's directory
    shown = capsys.readouterr().out
    assert shown.startswith("ladder ") and f"({reference})" in shown.splitlines()[0]
    assert "14/14 runs" in shown and s["conclusion"] in shown
    from tlmsearch.ladders.files import time_left

    left = time_left(reference)  # 2 points x (the uniform run + 3 profiles x 2 seeds), all done
    assert left["runs_done"] == left["runs_planned"] == 14 and left["run_seconds_left"] == 0.0
    (reference / "report.html").unlink()
    assert main(["ladder", "report", str(reference)]) == 0 and (reference / "report.html").is_file()
    assert json.loads((reference / "summary.json").read_text())["conclusion"] == s["conclusion"]
    before = losses
    assert main(["ladder", "resume", str(reference), "--quiet"]) == 0  # nothing left: the same records
    assert _losses(reference) == before
    assert main(["resume", str(reference), "--quiet"]) == 0  # the plain commands know a ladder too
    assert main(["report", str(reference)]) == 0 and main(["report", str(reference), "--margin", "0.02"]) == 2
    assert _losses(reference) == before


def _verifying(run: Path) -> bool:
    """A point's verification has recorded some of its runs, not all."""
    for sub in (p for p in run.glob("*") if (p / "trials.jsonl").is_file()):
        n = sum(r.kind == "verify" for r in read_records(sub))
        if 0 < n < 6:
            return True
    return False


def test_ladder_killed_mid_point_resumes_to_the_same_records(reference: Path, tmp_path: Path) -> None:
    tiny(tmp_path).save(tmp_path / "ladder-config.yaml")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "tlmsearch", "ladder", "run", "--config", str(tmp_path / "ladder-config.yaml")]
    run = tmp_path / "lad"
    proc = subprocess.Popen(
        cmd + ["--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    with reaped(proc):
        deadline = time.time() + 300
        while not (run.is_dir() and _verifying(run)):
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            assert time.time() < deadline, "no verification reached in time"
            time.sleep(0.05)
        kill_group(proc)
    before = _losses(run)
    assert 0 < len(before) < len(_losses(reference))
    done = subprocess.run(
        [sys.executable, "-m", "tlmsearch", "ladder", "resume", str(run), "--quiet"],
        env=env,
        capture_output=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    after = _losses(run)
    assert after == _losses(reference)  # nothing lost, nothing twice, the same losses
    assert all(after[k] == v for k, v in before.items())
    assert (
        json.loads((run / "summary.json").read_text())["conclusion"]
        == json.loads((reference / "summary.json").read_text())["conclusion"]
    )


def test_a_ladder_with_looks_verifies_each_point_group_sequentially(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`looks` 2 over planned seeds (a pilot of 2, at most 3 deciding seeds): every point's
    verify.json holds the sequential design and the looks it took, its verdict says it was
    group-sequential, and the ladder's summary reads the same verdicts `tlmsearch status` does."""
    from tlmsearch import ladder
    from tlmsearch.analysis.summary import recorded_verdicts
    from tlmsearch.rundir.io import read_verify

    cfg = tiny(tmp_path, "seq").replace(seeds=0, pilot_seeds=2, max_seeds=5, looks=2)
    result = ladder(cfg, progress=False)
    s = json.loads((result.run_dir / "summary.json").read_text())
    for p in s["points"]:
        doc = read_verify(result.run_dir / p["name"])
        seq = doc["sequential"]
        assert doc["pilot_seeds"] == [1, 2] and seq["design"]["looks"] == [2, 3], seq["design"]
        assert 1 <= seq["looks_taken"] <= 2 and doc["complete"]
        (v,) = recorded_verdicts(read_records(result.run_dir / p["name"]), doc, arch="transformer")
        assert "group-sequential" in v.headline and p["outcome"] == v.outcome
    from tlmsearch.cli import main

    assert main(["ladder", "status", str(result.run_dir)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("ladder seq (") and "2 points, each verified in 2 group-sequential looks; " in first
