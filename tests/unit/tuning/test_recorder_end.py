"""What `RecordWriter` records when Tune's experiment ends (no Ray: fake Tune trials).

After a Ctrl-C, Tune's clean-up marks every live trial TERMINATED before `on_experiment_end`,
with the last result it reported: such a trial was interrupted, not ended, and recording it
(as "stopped early") made an interrupted search look finished (exit 0, no resume hint).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.rundir.records import read_records
from tlmsearch.tuning.recorder import RecordWriter

CFG = SearchConfig(
    name="r", preset="tiny", model={"n_layers": 4}, trials=2,
    train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5), data=DataConfig(corpus="pydoc"),
)  # fmt: skip


def _trial(tid: str, status: str, step: int | None) -> Any:
    result = {"step": step, "curve": [{"step": step, "val_loss": 4.0}]} if step else {}
    return SimpleNamespace(
        trial_id=tid, status=status, last_result=result, config={"profile": "uniform", "number": 0},
        run_metadata=SimpleNamespace(num_failures=0), get_error=lambda: None,
    )  # fmt: skip


def test_trials_terminated_by_a_ctrl_c_clean_up_stay_unrecorded(tmp_path: Path) -> None:
    writer = RecordWriter(tmp_path, CFG)
    writer.setup()
    running = [_trial("a", "RUNNING", 10), _trial("b", "PENDING", None)]
    writer.on_trial_start(0, running, running[0])
    interrupted = [_trial("a", "TERMINATED", 10), _trial("b", "PENDING", None)]  # what Tune's clean-up leaves
    writer.on_experiment_end(interrupted)
    assert read_records(tmp_path) == []


def test_trials_tune_ended_without_completing_are_left_to_the_resume(tmp_path: Path) -> None:
    """Outside a time budget, `on_experiment_end` records nothing: a resume rebuilds from
    `trials.jsonl` and continues every trial without a record (from its checkpoint)."""
    writer = RecordWriter(tmp_path, CFG)
    writer.setup()
    writer.on_experiment_end([_trial("a", "TERMINATED", 30), _trial("b", "TERMINATED", None)])
    assert read_records(tmp_path) == []
