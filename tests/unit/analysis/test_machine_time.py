"""Machine time from the records (`analysis.machine_time`): hand-worked sums, a pack counted once,
the resources each run held, and the lines `status`, `ladder status` and `study status` print."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from analysis_fakes import record, search_records, write_run

from tlmsearch.analysis.machine_time import MachineTime, folder_time, machine_time
from tlmsearch.cli import main

ROOT = Path(__file__).resolve().parents[3]


def timed(trial_id: str, wall: float, resources: dict[str, float], start: str, end: str) -> dict[str, Any]:
    r = record(trial_id, "uniform", 2.3, kind="verify", seed=len(trial_id))
    r.update(wall_s=wall, resources=resources, started_at=start, ended_at=end)
    return r


def hand_records() -> list[dict[str, Any]]:
    """One run of an hour on a CPU; half an hour on 2 CPUs and half a GPU; a pack of three members
    (one process: 18 minutes once); a run that never started; six minutes from before resources
    were recorded (one CPU). By hand: 6 runs, 1.90 h, 2.40 CPU-hours, 0.25 GPU-hours."""
    t = "2026-12-05T0{}:00:00.000+00:00"
    return [
        timed("a", 3600.0, {"CPU": 1.0}, t.format(1), t.format(2)),
        timed("b", 1800.0, {"CPU": 2.0, "GPU": 0.5}, t.format(1), t.format(3)),
        *(timed(f"pack{i}", 1080.0, {"CPU": 1.0}, t.format(4), t.format(5)) for i in range(3)),
        timed("never", 0.0, {"CPU": 1.0}, "", ""),
        timed("old", 360.0, {}, t.format(6), t.format(7)),
    ]


def test_hand_worked_sums() -> None:
    got = machine_time(hand_records())
    assert got == MachineTime(runs=6, wall_s=6840.0, cpu_s=8640.0, gpu_s=900.0)
    assert got.text() == "6 runs, 1.90 h of run time summed over runs (2.40 CPU-hours, 0.25 GPU-hours)"
    assert MachineTime.from_dict(got.to_dict()) == got
    assert MachineTime().text() == "no run has trained yet"


def test_runs_with_the_same_wall_time_but_their_own_times_both_count() -> None:
    t = "2026-12-05T0{}:00:00.000+00:00"
    two = [
        timed("x", 600.0, {"CPU": 1.0}, t.format(1), t.format(2)),
        timed("y", 600.0, {"CPU": 1.0}, t.format(2), t.format(3)),
    ]
    assert machine_time(two) == MachineTime(runs=2, wall_s=1200.0, cpu_s=1200.0)
    assert machine_time([two[0], two[0] | {"trial_id": "z", "resources": {"CPU": 2.0}}]).wall_s == 1200.0


def test_a_folder_sums_every_run_below_it(tmp_path: Path) -> None:
    write_run(tmp_path / "study" / "transformer", hand_records())
    write_run(tmp_path / "study" / "random-transformer", hand_records()[:1])
    assert folder_time(tmp_path / "study") == MachineTime(runs=7, wall_s=10440.0, cpu_s=12240.0, gpu_s=900.0)
    assert folder_time(tmp_path / "empty") == MachineTime()
    (tmp_path / "study" / "broken" / "trials.jsonl").mkdir(parents=True)  # a folder where a file should be
    write_run(tmp_path / "study" / "garbled", [])
    (tmp_path / "study" / "garbled" / "trials.jsonl").write_bytes(b"\xff\xfe{not json\n")
    assert folder_time(tmp_path / "study").wall_s == 10440.0


def test_status_prints_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", search_records() + hand_records())
    assert main(["status", str(run)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # with the six search records of the fakes: a second each, no resources recorded (one CPU each)
    assert "machine time: 12 runs, 1.90 h of run time summed over runs (2.40 CPU-hours, 0.25 GPU-hours)" in lines
    assert main(["status", str(run), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["machine_time"] == {
        "runs": 12, "wall_s": 6846.0, "cpu_s": 8646.0, "gpu_s": 900.0}  # fmt: skip


def test_ladder_status_sums_its_points(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ladder = tmp_path / "ladder8"
    shutil.copytree(ROOT / "runs/reference/ladder8", ladder)
    assert main(["ladder", "status", str(ladder), "--json"]) == 0
    points = json.loads(capsys.readouterr().out)["points"]
    first = points[0]["machine_time"]  # the committed first point: 136 runs, 0.80 h (its README says so)
    assert first["runs"] == 136 and round(first["wall_s"] / 3600, 2) == 0.80, first
    assert main(["ladder", "status", str(ladder)]) == 0
    total = sum((MachineTime.from_dict(p["machine_time"]) for p in points), MachineTime())
    assert f"  machine time: {total.text()}" in capsys.readouterr().out.splitlines()


def test_study_status_names_each_architecture_and_the_rest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    study = tmp_path / "arch8"
    shutil.copytree(ROOT / "runs/reference/arch8", study, ignore=shutil.ignore_patterns("tune", "fixed"))
    archs = ("transformer", "gated_attention", "titans", "hope_attention")
    each = {a: folder_time(study / a) for a in archs}
    committed = folder_time(study)  # the architectures' runs and their transfer folders', as committed
    write_run(study / "random-transformer", hand_records()[:1])  # an hour that is no architecture's own
    assert main(["status", str(study)]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("  machine time:"))
    total = committed + machine_time(hand_records()[:1])
    assert total.runs > sum(t.runs for t in each.values())  # the hour and any transfer runs count in the total
    assert line.startswith(f"  machine time: {total.text()}; by architecture: "), line
    assert line.endswith(", ".join(f"{a} {t.wall_s / 3600:.2f} h" for a, t in each.items())), line


def test_hours_rounding_and_a_run_that_held_no_cpu() -> None:
    """Pinned by hand: 100 h on 1.5 CPUs; a run that held a GPU and no CPU counts no CPU-time;
    `to_dict` keeps three decimals; the value cannot be changed in place."""
    import dataclasses

    t = "2026-12-05T0{}:00:00.000+00:00"
    long = machine_time([timed("long", 360000.0, {"CPU": 1.5}, t.format(1), t.format(2))])
    assert long.text() == "1 run, 100.00 h of run time summed over runs (150.00 CPU-hours)"
    gpu_only = machine_time([timed("g", 1800.0, {"CPU": 0, "GPU": 1.0}, t.format(1), t.format(2))])
    assert gpu_only == MachineTime(runs=1, wall_s=1800.0, cpu_s=0.0, gpu_s=1800.0)
    assert MachineTime(1, 1.23456, 2.34567, 0.00049).to_dict() == {
        "runs": 1, "wall_s": 1.235, "cpu_s": 2.346, "gpu_s": 0.0}  # fmt: skip
    with pytest.raises(dataclasses.FrozenInstanceError):
        long.runs = 2  # type: ignore[misc]
