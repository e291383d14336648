"""Run directories: their layout, readers and writers, trial records and `Study`.

    run = create_run_dir("runs", name=None, prefix="train")   # runs/train-20261129-171500/
    write_config(run, {"model": ..., "train": ..., "data": ...})  # runs/<name>/config.yaml
    write_environment(run, seeds={"seed": 0})                     # runs/<name>/environment.json
    append_jsonl(run / "metrics.jsonl", {...}); write_json(run / "summary.json", {...})
    study = load("runs/<search>")                                 # search.yaml + trials.jsonl

Every file name lives in `tlmsearch.rundir.layout`. This layer knows nothing of Ray, training,
reports or exports: those read and write run directories through it. No torch import.
"""

from __future__ import annotations

from tlmsearch.configs.search import check_name
from tlmsearch.rundir.io import append_jsonl, read_jsonl, write_config, write_json, write_text
from tlmsearch.rundir.layout import create_run_dir, default_name
from tlmsearch.rundir.provenance import PACKAGES, environment, git_info, write_environment
from tlmsearch.rundir.records import (
    EVAL_KINDS,
    KINDS,
    SEARCH_KINDS,
    STATUSES,
    RecordLog,
    TrialRecord,
    as_records,
    finished,
    read_records,
)
from tlmsearch.rundir.study import Study, load, objective_value

__all__ = [
    "EVAL_KINDS", "KINDS", "PACKAGES", "SEARCH_KINDS", "STATUSES", "RecordLog", "Study", "TrialRecord",
    "append_jsonl", "as_records", "check_name", "create_run_dir", "default_name", "environment", "finished",
    "git_info", "load", "objective_value", "read_jsonl", "read_records", "write_config",
    "write_environment", "write_json", "write_text",
]  # fmt: skip
