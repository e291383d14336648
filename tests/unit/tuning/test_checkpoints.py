"""Checkpoints kept only while a trial can still need them (`tuning.checkpoints`; no Ray: fake
Tune trials whose folders lie on a real local or in-memory pyarrow filesystem)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow.fs
import pytest

from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.trial import OUTCOME, TrialOutcome
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.rundir.records import read_records
from tlmsearch.tuning.checkpoints import drop_checkpoints, drop_trial_checkpoints
from tlmsearch.tuning.recorder import RecordWriter
from tlmsearch.tuning.store_dir import StoreDir

CFG = SearchConfig(
    name="r", preset="tiny", model={"n_layers": 4}, trials=3,
    train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5), data=DataConfig(corpus="pydoc"),
)  # fmt: skip


def _folder(tune: Path, tid: str, checkpoints: int) -> Path:
    folder = tune / f"trial_{tid}"
    for i in range(checkpoints):
        (folder / f"checkpoint_{i:06d}").mkdir(parents=True)
        (folder / f"checkpoint_{i:06d}" / "checkpoint.pt").write_bytes(b"weights")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "params.json").write_text("{}")  # not a checkpoint: stays
    return folder


def _trial(tune: Path, tid: str, status: str, step: int, checkpoints: int = 3) -> Any:
    folder = _folder(tune, tid, checkpoints)
    curve = ({"step": step, "val_loss": 4.0},)
    result = {"step": step, OUTCOME: TrialOutcome(status="running", steps=step, curve=curve).to_dict()}
    return SimpleNamespace(
        trial_id=tid, status=status, last_result=result, config={"profile": "uniform", "number": 0},
        run_metadata=SimpleNamespace(num_failures=0), get_error=lambda: None,
        storage=SimpleNamespace(trial_fs_path=str(folder), storage_filesystem=pyarrow.fs.LocalFileSystem()),
    )  # fmt: skip


def _left(tune: Path, tid: str) -> list[str]:
    return sorted(p.name for p in (tune / f"trial_{tid}").iterdir())


@pytest.mark.parametrize("where", ["local", "in-memory"])
def test_drop_checkpoints_removes_only_the_checkpoint_folders(tmp_path: Path, where: str) -> None:
    if where == "in-memory":  # an object-store-like filesystem: no local path behind it
        d = StoreDir("mock://bucket/tune/trial_a", pyarrow.fs._MockFileSystem(), "bucket/tune/trial_a")
    else:
        d = StoreDir.of(str(tmp_path / "trial_a"))
    for i in range(3):
        d.fs.create_dir((d / f"checkpoint_{i:06d}").path, recursive=True)
        (d / f"checkpoint_{i:06d}" / "checkpoint.pt").write_bytes(b"w")
    (d / "params.json").write_bytes(b"{}")
    assert drop_checkpoints(d) == 3
    assert [c.name for c in d.glob("*")] == ["params.json"]
    assert drop_checkpoints(d) == 0 and drop_checkpoints(d / "missing") == 0


def test_an_ended_trial_loses_its_checkpoints_once_recorded_a_running_one_keeps_them(tmp_path: Path) -> None:
    tune = tmp_path / "tune"
    writer = RecordWriter(tmp_path, CFG)
    writer.setup()
    done, stopped, failed, running = (
        _trial(tune, "a", "TERMINATED", 30), _trial(tune, "b", "TERMINATED", 10),
        _trial(tune, "c", "ERROR", 10), _trial(tune, "d", "RUNNING", 20),
    )  # fmt: skip
    trials = [done, stopped, failed, running]
    writer.on_trial_complete(0, trials, done)
    writer.on_trial_complete(0, trials, stopped)
    writer.on_trial_error(0, trials, failed)
    assert [(r.trial_id, r.status) for r in read_records(tmp_path)] == [
        ("a", "complete"), ("b", "stopped"), ("c", "failed"),
    ]  # fmt: skip
    for tid in "abc":
        assert _left(tune, tid) == ["params.json"], tid
    assert _left(tune, "d") == ["checkpoint_000000", "checkpoint_000001", "checkpoint_000002", "params.json"]


def test_after_a_ctrl_c_the_interrupted_trial_keeps_its_checkpoints_to_resume(tmp_path: Path) -> None:
    tune = tmp_path / "tune"
    writer = RecordWriter(tmp_path, CFG)
    writer.setup()
    done, cut = _trial(tune, "a", "TERMINATED", 30), _trial(tune, "b", "RUNNING", 20)
    writer.on_step_begin(0, [done, cut])
    writer.on_trial_start(0, [done, cut], cut)
    writer.on_trial_complete(0, [done, cut], done)
    _folder(tune, "a", 5)  # a stopped worker saved once more after its record was written
    cut.status = "TERMINATED"  # what Tune's clean-up leaves after a Ctrl-C
    writer.on_experiment_end([done, cut])
    assert [r.trial_id for r in read_records(tmp_path)] == ["a"]
    assert _left(tune, "a") == ["params.json"]
    assert len(_left(tune, "b")) == 4  # its three checkpoints: the resume continues from the newest


def test_keep_checkpoints_keeps_every_one(tmp_path: Path) -> None:
    tune = tmp_path / "tune"
    writer = RecordWriter(tmp_path, CFG.replace(keep_checkpoints=True))
    writer.setup()
    done = _trial(tune, "a", "TERMINATED", 30)
    writer.on_trial_complete(0, [done], done)
    writer.on_experiment_end([done])
    assert len(read_records(tmp_path)) == 1 and len(_left(tune, "a")) == 4


def test_a_trial_without_a_folder_yet_is_skipped(tmp_path: Path) -> None:
    bare = SimpleNamespace(trial_id="a", storage=None)
    assert drop_trial_checkpoints([bare], {"a"}) == 0


def _checkpoint(tune: Path, tid: str, index: int, config: dict, step: int, whole: bool = True) -> None:
    import json

    folder = tune / f"trial_{tid}" / f"checkpoint_{index:06d}"
    folder.mkdir(parents=True)
    (folder / "checkpoint.pt").write_bytes(b"weights")
    (folder / "curve.json").write_text(json.dumps([{"step": s, "val_loss": 4.0} for s in range(10, step + 1, 10)]))
    if whole:
        (folder / "trial.json").write_text(json.dumps(config))


def test_a_resume_finds_each_unfinished_trial_by_its_identity_at_its_furthest_checkpoint(tmp_path: Path) -> None:
    from record_fakes import build_record

    from tlmsearch.tuning.checkpoints import interrupted_trials

    tune = tmp_path / "tune"
    _checkpoint(tune, "a", 0, {"profile": "uniform", "baseline": "uniform", "number": 0}, 10)  # recorded (by id)
    _checkpoint(tune, "b", 0, {"profile": "cosine", "number": 1}, 10)
    _checkpoint(tune, "b", 1, {"profile": "cosine", "number": 1}, 20)
    _checkpoint(tune, "b", 2, {"profile": "cosine", "number": 1}, 30, whole=False)  # cut by the kill
    _checkpoint(tune, "c", 0, {"profile": "cosine", "number": 1}, 10)  # trial 1 again, an earlier session's
    _checkpoint(tune, "d", 0, {"profile": "linear", "number": 2}, 10)  # recorded under another id
    _checkpoint(tune, "e", 0, {"profile": "cosine:start=0.5,end=1.5", "baseline": "cosine:start=0.5,end=1.5"}, 20)
    (tune / "trial_f").mkdir()  # started, killed before its first checkpoint
    result = {"step": 30, "curve": [{"step": 30, "val_loss": 3.0}]}
    records = [build_record(CFG, "a", {"profile": "uniform", "baseline": "uniform", "number": 0}, result),
               build_record(CFG, "z", {"profile": "linear", "number": 2}, result)]  # fmt: skip
    found = interrupted_trials(str(tune), records)
    assert [(i.config.get("number"), i.step, Path(i.checkpoint).parent.name) for i in found] == [
        (None, 20, "trial_e"), (1, 20, "trial_b"),
    ]  # fmt: skip
    assert Path(found[1].checkpoint).name == "checkpoint_000001"
    assert sorted(p.name for p in tune.iterdir()) == ["trial_a", "trial_b", "trial_e"]  # the rest serve nothing
