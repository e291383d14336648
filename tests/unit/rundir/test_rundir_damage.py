"""Damaged run directories: each case ends repaired or in one line naming the file (fast cases)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from tlmsearch.config import DataConfig, TrainConfig
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.resolve import trial_shape
from tlmsearch.rundir.lock import run_lock
from tlmsearch.rundir.records import RecordLog, damage_note, read_records, read_records_checked
from tlmsearch.tuning import SearchConfig
from tlmsearch.tuning.recorder import build_record

CFG = SearchConfig(
    name="r", preset="tiny", model={"n_layers": 4}, trials=4,
    train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5), data=DataConfig(corpus="pydoc"),
)  # fmt: skip


def _record(trial_id: str, number: int = 0, status: str = "complete", loss: float = 3.0):  # noqa: ANN202
    budget, _, model = trial_shape(CFG, ProfileSpec.parse("cosine"))
    trained = {"model": model.to_dict(), "train": CFG.train.to_dict(), "data": CFG.data.to_dict()}
    trained["budget"] = budget.to_dict()
    steps = 30 if status == "complete" else 10
    result = {"step": steps, "curve": [{"step": steps, "val_loss": loss}], "trained": trained}
    if status == "failed":
        result.update(failed=1, reason="boom")
    return build_record(CFG, trial_id, {"profile": "cosine", "number": number}, result)


def _run(tmp_path: Path, *records) -> Path:  # noqa: ANN002
    run = tmp_path / "run"
    run.mkdir()
    CFG.save(run / "search.yaml")
    log = RecordLog(run)
    for r in records:
        log.append(r)
    return run


def test_export_of_a_crafted_trial_id_stays_in_the_run_directory(tmp_path: Path) -> None:
    from tlmsearch.export import export_run

    run = _run(tmp_path, _record("../../.."), _record("/tmp/evil", 1))
    before = set(tmp_path.rglob("*")) | set(tmp_path.parent.iterdir())
    for trial in ("../../..", "/tmp/evil"):  # refused in one line: the id would lead outside
        with pytest.raises(UserError, match="refusing it"):
            export_run(run, trial, "native")
    created = (set(tmp_path.rglob("*")) | set(tmp_path.parent.iterdir())) - before
    assert all(p.resolve().is_relative_to((run / "export").resolve()) for p in created), created
    assert not Path("/tmp/evil-native").exists()


def test_torn_last_record_is_cut_with_one_warning_and_kept_aside(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    run = _run(tmp_path, _record("a"), _record("b", 1))
    text = (run / "trials.jsonl").read_text()
    (run / "trials.jsonl").write_text(text[: len(text) - 40])  # a crash mid-append of b
    assert damage_note(run) is not None and "skipped 1 damaged line(s) (line 2)" in damage_note(run)
    RecordLog(run)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "trials.jsonl: removed a last line cut short" in err[0]
    assert [r.trial_id for r in read_records(run)] == ["a"] and damage_note(run) is None
    assert (run / "trials.jsonl.torn").read_text().startswith('{"trial_id": "b"')
    RecordLog(run).append(_record("c", 2))  # appends start on a clean line
    assert [r.trial_id for r in read_records(run)] == ["a", "c"]


def test_status_report_export_say_when_they_skipped_damaged_lines(tmp_path: Path) -> None:
    run = _run(tmp_path, _record("a"), _record("b", 1))
    with (run / "trials.jsonl").open("a") as f:
        f.write('{"trial_id": 5, "nonsense": true}\n\x00garbage\n')
    records, bad = read_records_checked(run)
    assert [r.trial_id for r in records] == ["a", "b"] and len(bad) == 2
    for args in (["status", str(run)], ["export", str(run), "--trial", "a", "--stdout"]):
        out = subprocess.run([sys.executable, "-m", "tlmsearch", *args], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "skipped 2 damaged line(s) (line 4)" in out.stderr, out.stderr


def test_garbled_journal_is_one_line_naming_the_file_and_a_torn_one_is_repaired(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from tlmsearch.tuning.reconcile import repair_journal

    run = _run(tmp_path)
    lines = [json.dumps({"op_code": 0, "worker_id": "w", "study_name": "search", "directions": [1]})] * 3
    (run / "optuna.log").write_text("\n".join(lines) + "\n" + lines[0][:10])
    assert repair_journal(run) is True
    assert "optuna.log: removed a last line cut short" in capsys.readouterr().err
    assert (run / "optuna.log").read_text().endswith("\n")
    (run / "optuna.log").write_text(lines[0] + "\n{garbled\n" + lines[0] + "\n")
    with pytest.raises(ConfigError, match=r"optuna.log: line 2 is garbled.*head -n 1") as info:
        repair_journal(run)
    assert "\n" not in str(info.value)


def test_tune_state_problems_are_named(tmp_path: Path) -> None:
    from tlmsearch.tuning.reconcile import tune_state_problem

    whole = pickle.dumps({"counter": 3, "experiment": list(range(200))})
    tune = tmp_path / "tune"
    assert "is missing" in (tune_state_problem(tune) or "")
    tune.mkdir()
    (tune / "tuner.pkl").write_bytes(whole[:-1])  # cut by a kill mid-copy
    assert "tuner.pkl is damaged" in (tune_state_problem(tune) or "")
    (tune / "tuner.pkl").write_bytes(whole)
    (tune / "experiment_state-2026.json").write_text("")
    assert "experiment_state-2026.json is damaged" in (tune_state_problem(tune) or "")
    (tune / "experiment_state-2026.json").write_text('{"trial_data": [')
    assert "experiment_state-2026.json is damaged" in (tune_state_problem(tune) or "")
    (tune / "experiment_state-2026.json").write_text("{}")
    for name in ("searcher-state-2026.pkl", "search_gen_state-2026.json"):
        (tune / name).write_bytes(b"")
        assert f"{name} is empty" in (tune_state_problem(tune) or "")
        for cut in (1, len(whole) // 2, len(whole) - 1):  # non-empty, cut short
            (tune / name).write_bytes(whole[:cut])
            assert f"{name} is damaged (cut short or garbled)" in (tune_state_problem(tune) or ""), cut
        (tune / name).write_bytes(b"garbage that is no pickle")
        assert f"{name} is damaged" in (tune_state_problem(tune) or "")
        (tune / name).write_bytes(whole)
    assert tune_state_problem(tune) is None


def test_zombie_trials_are_closed_from_their_records(tmp_path: Path) -> None:
    import optuna

    from tlmsearch.tuning.reconcile import close_zombies
    from tlmsearch.tuning.searcher import STUDY_NAME, open_storage

    study = optuna.create_study(study_name=STUDY_NAME, storage=open_storage(str(tmp_path)))
    for _ in range(4):
        study.ask()
    study.enqueue_trial({"x": 1.0})
    records = [_record("a", 0, loss=2.5), _record("b", 1, status="stopped"), _record("c", 2, status="failed")]
    counts = close_zombies(study, records, CFG)
    assert counts == {"COMPLETE": 1, "PRUNED": 1, "FAIL": 3}, counts
    states = [
        t.state.name for t in optuna.load_study(study_name=STUDY_NAME, storage=open_storage(str(tmp_path))).trials
    ]
    assert states == ["COMPLETE", "PRUNED", "FAIL", "FAIL", "FAIL"]
    assert study.trials[0].value == 2.5


def test_a_second_writer_is_refused_in_one_line(tmp_path: Path) -> None:
    code = (
        "import sys, time\nfrom tlmsearch.rundir.lock import run_lock\n"
        f"with run_lock({str(tmp_path)!r}):\n    print('held', flush=True)\n    time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError, match=f"is in use by pid {holder.pid}") as info, run_lock(tmp_path):
            pass
        assert "\n" not in str(info.value)
    finally:
        holder.kill()
        holder.wait()
    with run_lock(tmp_path):  # the kernel dropped the killed holder's lock: no stale lock
        assert os.path.exists(tmp_path / ".lock")


def test_exit_status_three_when_every_search_trial_failed(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from tlmsearch.cli.status import EVERY_TRIAL_FAILED, exit_status
    from tlmsearch.rundir.study import load

    run = _run(tmp_path, _record("a", 0, status="failed"), _record("b", 1, status="failed"))
    assert exit_status(load(run)) == EVERY_TRIAL_FAILED == 3
    assert "all 2 trials failed" in capsys.readouterr().err
    RecordLog(run).append(_record("c", 2))
    assert exit_status(load(run)) == 0


def test_prune_keeps_the_newest_checkpoint_of_each_trial(tmp_path: Path) -> None:
    from tlmsearch.tuning.reconcile import prune_checkpoints

    for trial, n in (("trial_a", 3), ("trial_b", 1)):
        for i in range(n):
            (tmp_path / trial / f"checkpoint_{i:06d}").mkdir(parents=True)
    assert prune_checkpoints(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.glob("*/checkpoint_*")) == ["checkpoint_000000", "checkpoint_000002"]


def test_the_lock_file_goes_when_the_holder_ends(tmp_path: Path) -> None:
    with run_lock(tmp_path):
        assert (tmp_path / ".lock").read_text().startswith(f"pid {os.getpid()} ")
    assert not (tmp_path / ".lock").exists()  # a normal exit leaves no .lock behind
    with pytest.raises(RuntimeError), run_lock(tmp_path):
        raise RuntimeError("the block failed")
    assert not (tmp_path / ".lock").exists()


def test_a_lock_file_removed_under_a_waiter_is_not_held_twice(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """The waiter opened .lock just before its ending holder removed it: it must not hold the
    removed file (a third process would lock the new one too), but the one the directory names."""
    real_open, calls = os.open, []

    def open_then_removed(path, flags, mode=0o777):  # noqa: ANN001, ANN202
        fd = real_open(path, flags, mode)
        calls.append(path)
        if len(calls) == 1:
            os.unlink(path)  # the holder ends between this open and the flock
        return fd

    monkeypatch.setattr("tlmsearch.rundir.lock.os.open", open_then_removed)
    with run_lock(tmp_path):
        assert len(calls) == 2 and (tmp_path / ".lock").exists()
        monkeypatch.setattr("tlmsearch.rundir.lock.os.open", real_open)
        with pytest.raises(ConfigError, match="is in use"), run_lock(tmp_path):
            pass
