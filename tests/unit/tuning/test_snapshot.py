"""`reconcile_snapshot` brings a Tune snapshot that lags behind `trials.jsonl` in line with it
(crafted state files of the shape Tune writes; no Ray)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from types import SimpleNamespace

from tlmsearch.config import DataConfig, TrainConfig
from tlmsearch.search_config import SearchConfig
from tlmsearch.tuning.recorder import build_record
from tlmsearch.tuning.snapshot import reconcile_snapshot

CFG = SearchConfig(
    name="r", preset="tiny", model={"n_layers": 4}, trials=8,
    train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5), data=DataConfig(corpus="pydoc"),
)  # fmt: skip


def _record(tid: str, number: int) -> object:
    return build_record(CFG, tid, {"profile": "uniform", "number": number}, {"step": 30, "curve": []})


def _snapshot(tune: Path, trials: dict[str, tuple[str, int | None]], counter: int, live: set[str]) -> None:
    tune.mkdir(parents=True)
    data = [
        [json.dumps({"trial_id": tid, "status": status}), json.dumps({"last_result": {"step": step} if step else {}})]
        for tid, (status, step) in trials.items()
    ]
    (tune / "experiment_state-2026.json").write_text(json.dumps({"trial_data": data, "runner_data": {}}))
    storage = SimpleNamespace(storage_fs_path="/elsewhere/run", experiment_dir_name="tune")
    state = {
        "counter": counter, "total_samples": 8, "finished": False, "experiment": SimpleNamespace(storage=storage),
        "name:ConcurrencyLimiter": {"live_trials": set(live), "num_unfinished_live_trials": len(live)},
    }  # fmt: skip
    (tune / "search_gen_state-2026.json").write_bytes(pickle.dumps(state))


def _read(tune: Path) -> tuple[dict[str, str], dict]:
    state = json.loads((tune / "experiment_state-2026.json").read_text())
    statuses = {json.loads(t[0])["trial_id"]: json.loads(t[0])["status"] for t in state["trial_data"]}
    return statuses, pickle.loads((tune / "search_gen_state-2026.json").read_bytes())


def test_a_lagging_snapshot_ends_recorded_trials_and_counts_trials_created_after_it(tmp_path: Path) -> None:
    tune = tmp_path / "tune"
    # the snapshot: a ended, b and c running; then b ended, d was created and ended, e created and killed
    _snapshot(tune, {"a": ("TERMINATED", 30), "b": ("RUNNING", 10), "c": ("RUNNING", 10)}, 3, {"b", "c"})
    records = [_record("a", 0), _record("b", 1), _record("d", 3)]
    fix = reconcile_snapshot(tune, tmp_path, records, CFG.trials)  # type: ignore[arg-type]
    statuses, gen = _read(tune)
    assert statuses == {"a": "TERMINATED", "b": "TERMINATED", "c": "RUNNING"}  # b is not run again
    assert gen["counter"] == 4  # a, b, c, d exist: 4 more to create, not 5 (e was never recorded: replaced)
    assert gen["name:ConcurrencyLimiter"]["live_trials"] == {"c"}  # b no longer holds a slot
    assert gen["experiment"].storage.storage_fs_path == str(tmp_path)  # where the run now lies
    assert fix.ended == ("b",) and (fix.created_before, fix.created_after) == (3, 4)


def test_a_snapshot_in_line_with_the_records_is_left_as_it_is(tmp_path: Path) -> None:
    tune = tmp_path / "tune"
    _snapshot(tune, {"a": ("TERMINATED", 30), "b": ("RUNNING", 10)}, 2, {"b"})
    before = {p.name: p.read_bytes() for p in tune.iterdir()}
    (tune / "search_gen_state-2026.json").write_bytes(before["search_gen_state-2026.json"])
    state = pickle.loads(before["search_gen_state-2026.json"])
    state["experiment"].storage.storage_fs_path = str(tmp_path)
    (tune / "search_gen_state-2026.json").write_bytes(pickle.dumps(state))
    before = {p.name: p.read_bytes() for p in tune.iterdir()}
    fix = reconcile_snapshot(tune, tmp_path, [_record("a", 0)], CFG.trials)  # type: ignore[arg-type]
    assert {p.name: p.read_bytes() for p in tune.iterdir()} == before
    assert str(fix) == "nothing to change"


def test_a_trial_that_ended_without_reporting_is_replaced(tmp_path: Path) -> None:
    tune = tmp_path / "tune"
    _snapshot(tune, {"a": ("TERMINATED", 30), "b": ("TERMINATED", None)}, 2, set())
    reconcile_snapshot(tune, tmp_path, [_record("a", 0)], CFG.trials)  # type: ignore[arg-type]
    assert _read(tune)[1]["counter"] == 1  # b will never get a record: a trial runs in its place
