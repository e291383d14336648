"""The evaluation-batch benchmark end to end on 64 windows (`--dry`): both batch sizes timed,
the same nats up to float rounding, the figures written."""

from __future__ import annotations

import json
from pathlib import Path

from bench import bench_eval


def test_the_dry_run_times_both_batches_and_finds_the_same_nats(tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    argv = ["--dry", "--archs", "transformer", "--batches", "2", "--out", str(out)]
    assert bench_eval.main(argv) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert (row["windows"], row["train_batch"], row["eval_batch"]) == (64, 2, 32)
    assert row["train_s"] > 0 and row["eval_s"] > 0 and row["rel_diff"] < 1e-6
