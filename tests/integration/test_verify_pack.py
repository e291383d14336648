"""verify --pack: packed verification trials (and its rate check's) give the records of unpacked
ones, and a pack killed midway keeps the members it recorded (verify run again trains only the others).

Slow: a tiny search, then verifications through Ray (packs are Ray tasks, one trial's CPUs each).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_runs import tiny_search
from pack_records import assert_same_records, key, records_of

from tlmsearch.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("ray_session")]

ROOT = Path(__file__).resolve().parents[2]
VERIFY = ["--seeds", "2", "--top-k", "1", "--no-report", "--quiet"]


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_search(tmp_path_factory.mktemp("pack") / "runs")


def test_verify_pack_on_gives_the_records_of_pack_off(searched: Path, tmp_path: Path) -> None:
    """The verification's trials and its learning-rate check's (`--rate-check`: runs of one rate
    pack together) give the same records packed and separate."""
    off, on = tmp_path / "off", tmp_path / "on"
    shutil.copytree(searched, off)
    shutil.copytree(searched, on)
    assert main(["verify", str(off), *VERIFY, "--rate-check", "2", "--pack", "off"]) == 0
    assert main(["verify", str(on), *VERIFY, "--rate-check", "2", "--pack", "on"]) == 0
    assert len(records_of(off, "verify")) >= 8
    assert_same_records(records_of(off, "verify"), records_of(on, "verify"))
    rates = records_of(off, "ratecheck")
    assert len(rates) == 8  # cosine and the candidate, at half and twice the rate, on 2 seeds
    assert_same_records(rates, records_of(on, "ratecheck"))
    # the verdict and the check are read from the records as for any verify
    decided, checked = (json.loads((run / "verify.json").read_text()) for run in (off, on))
    assert checked["decision_seeds"] == decided["decision_seeds"] == [1, 2]
    assert checked["rate_check"]["complete"] and decided["rate_check"]["complete"]


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
    first = records_of(run, "verify")
    assert len(first) == 3  # killed after its third member's record: the pack's others unrecorded
    kept = {r["trial_id"]: key(r) for r in first}

    capsys.readouterr()
    assert main(["verify", str(run), *VERIFY[:-1], "--pack", "on"]) == 0
    records = records_of(run, "verify")
    n = len(records)
    assert f"verify: {n} (profile, seed) runs, 3 reused, {n - 3} trained" in capsys.readouterr().out
    keys = [key(r) for r in records]
    assert len(keys) == len(set(keys)) >= 8  # every (profile, seed) once: nothing trained twice
    assert {r["trial_id"]: key(r) for r in records[:3]} == kept  # the recorded members were reused
    assert all(r["status"] == "complete" for r in records)
