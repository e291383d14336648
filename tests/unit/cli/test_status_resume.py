"""`status` counts a compare run's own trials; `resume` of a finished search returns without Ray."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from record_fakes import build_record

from tlmsearch.cli import main
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.rundir.records import RecordLog
from tlmsearch.tuning import SearchConfig

CFG = SearchConfig(
    name="r", preset="tiny", model={"n_layers": 4}, trials=6, space="families", scheduler="none", noise_seeds=0,
    baselines=("uniform", "cosine:start=1.5,end=0.5"),
    train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5), data=DataConfig(corpus="pydoc"),
)  # fmt: skip
CURVE = [{"step": 30.0, "val_loss": 3.0}]


def _run_dir(tmp_path: Path, kind: str, n: int) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    CFG.save(tmp_path / "search.yaml")
    log = RecordLog(tmp_path)
    for i in range(n):
        profile = CFG.baselines[i % 2]
        config = {"profile": profile, "baseline": profile, "kind": kind, "number": -1 if kind != "sampled" else i}
        log.append(build_record(CFG, f"t{i}", config, {"step": 30, "curve": CURVE}))
    return tmp_path


def test_status_of_a_compare_run_counts_its_compare_trials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path, "compare", 6)
    (run / "compare.json").write_text(json.dumps({"profiles": list(CFG.baselines), "seeds": [0, 1, 2], "steps": 30}))
    assert main(["status", str(run)]) == 0
    assert "trials: 6/6 ended: 6 complete, 0 stopped, 0 failed" in capsys.readouterr().out
    assert main(["status", str(run), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["kinds"] == ["compare"] and len(status["best"]) == 5


def test_status_of_a_search_names_its_verify_trials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path, "sampled", 6)
    log = RecordLog(run)
    for i in range(3):
        config = {"profile": "uniform", "baseline": "uniform", "kind": "verify", "number": -1, "seed": i}
        log.append(build_record(CFG, f"v{i}", config, {"step": 30, "curve": CURVE}))
    assert main(["status", str(run)]) == 0
    assert "trials: 6/6 ended: 6 complete, 0 stopped, 0 failed; objectives: val_loss; 3 verify trials" in (
        capsys.readouterr().out
    )


def test_resume_of_a_finished_search_returns_without_starting_ray(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tlmsearch.tuning import runner

    def no_ray(*args: object, **kwargs: object) -> None:
        raise AssertionError("resume of a finished search started Ray")

    monkeypatch.setattr(runner, "start_ray", no_ray)
    run = _run_dir(tmp_path, "sampled", 6)
    study = runner.resume(run, progress=False)
    assert len(study.records) == 6
    short = _run_dir(tmp_path / "short", "sampled", 5)  # one trial missing: Ray is needed
    with pytest.raises(AssertionError, match="started Ray"):
        runner.resume(short, progress=False)
    # every search trial recorded, but a noise-floor seed missing: Ray is needed for it
    CFG.replace(noise_seeds=2).save(run / "search.yaml")
    with pytest.raises(AssertionError, match="started Ray"):
        runner.resume(run, progress=False)


def test_resume_of_a_search_where_every_trial_failed_exits_3_without_starting_ray(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tlmsearch.cli.status import EVERY_TRIAL_FAILED
    from tlmsearch.tuning import runner

    def no_ray(*args: object, **kwargs: object) -> None:
        raise AssertionError("resume of a finished search started Ray")

    monkeypatch.setattr(runner, "start_ray", no_ray)
    run = tmp_path
    CFG.save(run / "search.yaml")
    log = RecordLog(run)
    for i in range(CFG.trials):
        config = {"profile": "uniform", "number": i}
        log.append(build_record(CFG, f"t{i}", config, {"failed": 1, "reason": "TrainingDiverged: nan", "step": 0}))
    assert EVERY_TRIAL_FAILED == 3  # the documented code (`tlmsearch resume --help`)
    assert main(["resume", str(run), "--quiet"]) == EVERY_TRIAL_FAILED
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tlmsearch: error: all {CFG.trials} trials failed; see their errors with `tlmsearch status {run}`"]


def test_live_line_names_trials_as_status_does_and_shows_steps_inside_trials(tmp_path: Path) -> None:
    from tlmsearch.cli.status import status_dict
    from tlmsearch.rundir.study import load
    from tlmsearch.tuning.progress import running_from, summary_line, trial_name

    run = _run_dir(tmp_path, "sampled", 2)
    records = load(run).records
    trials = [running_from("t5 knots", None, 40, 60), running_from("t6 uniform", None, 20, 60)]
    line = summary_line("demo", records, 6, 2, 65.0, trials=trials)
    running = "2 running: t5 knots step 40/60; t6 uniform step 20/60"
    assert f"2/6 ended: 2 complete, 0 stopped, 0 failed | {running} | " in line
    best = status_dict(load(run))["best"][0]
    assert line.endswith(f"best val_loss 3.0000 ({best['trial_id']} {best['baseline']}) | time left unknown")
    assert trial_name(records[0]) == f"{records[0].trial_id} uniform"
    assert summary_line("demo", [], 6, 1, 1.0).endswith("1 running | time left unknown")


def test_scratch_folders_of_dead_drivers_are_swept(tmp_path: Path) -> None:
    import os
    import subprocess

    from tlmsearch.tuning.ray_session import sweep_dead_scratch

    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs
    for pid in (dead.pid, os.getpid(), 1):
        (tmp_path / f"tlmsearch-run-{pid}-abc" / "tlmsearch-trial-x").mkdir(parents=True)
    assert sweep_dead_scratch(tmp_path) == [tmp_path / f"tlmsearch-run-{dead.pid}-abc"]
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == sorted([f"tlmsearch-run-{os.getpid()}-abc", "tlmsearch-run-1-abc"])  # alive: kept


def test_a_dead_drivers_ray_session_goes_with_its_scratch_folder(tmp_path: Path) -> None:
    """A driver killed with SIGKILL leaves its local Ray's session folder (its logs); its scratch
    folder names it, and the next driver's sweep deletes both. A session folder not of that pid
    (a cluster's, named for another process) is never touched, whatever the note says."""
    import subprocess

    from tlmsearch.tuning.ray_session import SESSION_NOTE, sweep_dead_scratch

    dead = subprocess.Popen(["true"])
    dead.wait()
    ray_tmp, scratch = tmp_path / "ray", tmp_path / "tmp"
    own = ray_tmp / f"session_2026-12-05_04-41-09_881032_{dead.pid}"
    other = ray_tmp / "session_2026-12-05_04-41-09_881032_1"
    for folder in (own / "logs", other / "logs", scratch):
        folder.mkdir(parents=True, exist_ok=True)
    for name, session in (("a", own), ("b", other)):
        note = scratch / f"tlmsearch-run-{dead.pid}-{name}" / SESSION_NOTE
        note.parent.mkdir()
        note.write_text(str(session))
    gone = sweep_dead_scratch(scratch)
    assert sorted(map(str, gone)) == sorted(
        map(str, [scratch / f"tlmsearch-run-{dead.pid}-a", own, scratch / f"tlmsearch-run-{dead.pid}-b"])
    )
    assert not own.exists() and other.is_dir()
    assert list(scratch.iterdir()) == []
