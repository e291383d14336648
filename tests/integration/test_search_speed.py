"""A real search (shared local Ray, tiny model) with a measured speed objective: every
full-length trial carries the micro-benchmark's speed, Optuna holds both objectives, and the
report's figure is the front of the two (not a ranking, not tokens/s)."""

from __future__ import annotations

import math
from pathlib import Path

import optuna
import pytest

from tlmsearch.analysis.summary import summarize
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.report.run import quality_figure
from tlmsearch.rundir.records import SEARCH_KINDS
from tlmsearch.tuning import SearchConfig, search
from tlmsearch.tuning.searcher import STUDY_NAME, open_storage

pytestmark = pytest.mark.usefixtures("ray_session")


@pytest.mark.slow
def test_search_with_train_speed_objective(tmp_path: Path) -> None:
    cfg = SearchConfig(
        name="speed", runs_dir=str(tmp_path), preset="tiny", model={"n_layers": 4}, trials=5, scheduler="none",
        objectives=("val_loss", "train_speed"), baselines=("uniform", "cosine:start=1.5,end=0.5"), noise_seeds=0,
        train=TrainConfig(steps=20, eval_interval=10, warmup_steps=5, batch_size=4, eval_windows=8),
        data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    study = search(cfg, progress=False)
    assert len(study.records) == 5
    for r in study.records:
        assert r.full_fidelity
        m = r.metrics
        assert m["train_speed_lo"] <= m["train_speed"] <= m["train_speed_hi"] and m["infer_speed"] > 0
        assert math.isfinite(m["train_bench_tokens_per_s"])
    ot = optuna.load_study(study_name=STUDY_NAME, storage=open_storage(str(tmp_path / "speed")))
    by_number = {t.number: t for t in ot.trials}
    for r in study.records:
        assert by_number[r.number].values == pytest.approx([r.metrics["val_loss"], r.metrics["train_speed"]])
    fig = quality_figure(list(study.records), SEARCH_KINDS, cfg.objectives)
    assert "train_speed" in fig.layout.xaxis.title.text
    assert summarize(study.records, cfg.to_dict())["pareto_x"] == "train_speed"
