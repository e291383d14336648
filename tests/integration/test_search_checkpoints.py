"""A search and a fixed batch leave no checkpoint of an ended trial behind, unless
`keep_checkpoints` (tiny model on the shared local Ray of tests/integration)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.profiles import ProfileSpec
from tlmsearch.tuning import FixedTrial, SearchConfig, run_fixed, search

pytestmark = pytest.mark.usefixtures("ray_session")


def tiny(tmp_path: Path, **changes: object) -> SearchConfig:
    base = SearchConfig(
        name="ck", runs_dir=str(tmp_path), preset="tiny", model={"n_layers": 4}, trials=4, noise_seeds=2,
        scheduler="none", max_concurrent=1,
        train=TrainConfig(steps=20, eval_interval=5, warmup_steps=2, batch_size=4, eval_windows=4),
        data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    return base.replace(**changes)


def _checkpoints(run: Path) -> list[Path]:
    return sorted(run.rglob("checkpoint_*"))


@pytest.mark.slow
def test_ended_trials_keep_no_checkpoints_unless_asked(tmp_path: Path) -> None:
    study = search(tiny(tmp_path), progress=False)
    run = tmp_path / "ck"
    assert len(study.records) == 5 and all(r.status == "complete" for r in study.records)  # 4 trials, 1 noise
    assert len(list((run / "tune").glob("trial_*"))) == 4 and list((run / "fixed").glob("noise-*/trial_*"))
    assert _checkpoints(run) == []  # each trial checkpointed 4 times while it trained
    items = [FixedTrial(spec=ProfileSpec.parse("uniform"), seed=s) for s in (7, 8)]
    records = run_fixed(run, study.config.replace(keep_checkpoints=True), items, kind="verify")
    assert len(records) == 2
    kept = [p for p in _checkpoints(run) if p.parent.parent.name.startswith("verify-")]
    assert len(kept) == 2 * 4 and {p.parent.name for p in kept} == {f"trial_{r.trial_id}" for r in records}
