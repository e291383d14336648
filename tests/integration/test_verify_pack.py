"""verify --pack: packed verification trials give the records of unpacked ones, and a pack killed
midway keeps the members it recorded (verify run again trains only the others).

Slow: a tiny search, then verifications through Ray (packs are Ray tasks, one trial's CPUs each).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cli_runs import tiny_search

from tlmsearch.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("ray_session")]

ROOT = Path(__file__).resolve().parents[2]
VERIFY = ["--seeds", "2", "--top-k", "1", "--no-report", "--quiet"]
TOL = 2e-5  # float32: a member's numbers against the trial alone (tests/unit/pack/test_pack_records.py)
TIMES = {"tokens_per_s", "mfu", "elapsed_s", "wall_s", "train_time_s"}


def _verified(run: Path) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in (run / "trials.jsonl").read_text().splitlines() if x.strip()]
    return [r for r in lines if r["kind"] == "verify"]


def _key(r: dict[str, Any]) -> tuple[str, int]:
    return json.dumps(r["profile"], sort_keys=True), r["seed"]


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_search(tmp_path_factory.mktemp("pack") / "runs")


def test_verify_pack_on_gives_the_records_of_pack_off(searched: Path, tmp_path: Path) -> None:
    off, on = tmp_path / "off", tmp_path / "on"
    shutil.copytree(searched, off)
    shutil.copytree(searched, on)
    assert main(["verify", str(off), *VERIFY, "--pack", "off"]) == 0
    assert main(["verify", str(on), *VERIFY, "--pack", "on"]) == 0
    a, b = {_key(r): r for r in _verified(off)}, {_key(r): r for r in _verified(on)}
    assert len(a) >= 8 and set(a) == set(b)  # every (profile, seed), once each
    for key, x in a.items():
        y = b[key]
        assert set(x) == set(y) and set(x["metrics"]) == set(y["metrics"])
        for field in ("status", "widths", "budget", "model", "train", "data", "baseline", "steps", "devices"):
            assert x[field] == y[field], (key, field)
        for m, n in [(x["metrics"], y["metrics"]), *zip(x["curve"], y["curve"], strict=True)]:
            for k in set(m) - TIMES:
                assert math.isclose(m[k], n[k], rel_tol=TOL, abs_tol=TOL), (key, k, m[k], n[k])
    # the verdict is read from the records as for any verify: both decided on the same seeds
    assert json.loads((on / "verify.json").read_text())["decision_seeds"] == [1, 2]


def test_verify_pack_refuses_a_bad_mode(searched: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(searched), "--pack", "sometimes"]) == 2
    err = capsys.readouterr().err
    assert "--pack='sometimes' is not allowed; choose one of: auto, on, off" in err and "Traceback" not in err


def test_a_pack_killed_midway_resumes_without_redoing_recorded_members(
    searched: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(searched, run)
    before = len((run / "trials.jsonl").read_text().splitlines())
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "KILL_AFTER_RECORDS": str(before + 3)}
    cmd = [sys.executable, str(ROOT / "tests/helpers/killing_driver.py"), "verify", str(run), *VERIFY, "--pack", "on"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=500)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its Ray, as a crash would leave it
        except ProcessLookupError:
            pass
    assert proc.returncode == -signal.SIGKILL, err.decode()[-3000:]
    time.sleep(1)
    first = _verified(run)
    assert len(first) == 3  # killed after its third member's record: the pack's others unrecorded
    kept = {r["trial_id"]: _key(r) for r in first}

    capsys.readouterr()
    assert main(["verify", str(run), *VERIFY[:-1], "--pack", "on"]) == 0
    records = _verified(run)
    n = len(records)
    assert f"verify: {n} (profile, seed) runs, 3 reused, {n - 3} trained" in capsys.readouterr().out
    keys = [_key(r) for r in records]
    assert len(keys) == len(set(keys)) >= 8  # every (profile, seed) once: nothing trained twice
    assert {r["trial_id"]: _key(r) for r in records[:3]} == kept  # the recorded members were reused
    assert all(r["status"] == "complete" for r in records)
