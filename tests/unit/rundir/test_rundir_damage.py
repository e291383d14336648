"""Damaged run directories: each case ends repaired or in one line naming the file (fast cases)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from record_fakes import build_record

from tlmsearch.configs.resolve import trial_shape
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.lock import run_lock
from tlmsearch.rundir.records import RecordLog, damage_note, read_records, read_records_checked
from tlmsearch.tuning import SearchConfig

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
    from tlmsearch.export.schedule import export_run

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


@pytest.mark.slow
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
