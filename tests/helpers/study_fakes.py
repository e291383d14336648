"""The tiny two-architecture study configuration the study tests share."""

from __future__ import annotations

from pathlib import Path

from tlmsearch.configs.study import StudyConfig
from tlmsearch.core.base import DataConfig, TrainConfig


def tiny_study(tmp_path: Path, **changes: object) -> StudyConfig:
    """Transformer and Gated Attention at the tiny preset with 4 layers: 4 search trials, top 1,
    2 seeds, one early-group control, 10 steps on the pydoc corpus, no learning-rate calibration (its
    own tests turn it on: tests/integration/test_search_lr_calibration.py) and no learning-rate check
    in the verification (tests/integration/test_verify_rate_check.py); `changes` replace fields (flat
    names: `StudyConfig.with_fields`)."""
    base = StudyConfig.from_flat(dict(
        name="st", runs_dir=str(tmp_path), archs=("transformer", "gated_attention"), preset="tiny",
        model={"n_layers": 4}, trials=4, top_k=1, seeds=2, transfer_seeds=2, scheduler="none",
        controls=("groups:third=early",), max_seeds=5, lr_calibration="off", rate_check=0,
        train=TrainConfig(steps=10, eval_interval=10, warmup_steps=2, batch_size=4, eval_windows=4),
        data=DataConfig(corpus="pydoc"),
    ))  # fmt: skip
    return base.with_fields(**changes)
