"""Evaluation batches (`training.trainer.eval_batch`): short windows are read many to a forward.

The whole-split final evaluation of a tiny model read 8 windows of 32 tokens per forward (the
training batch): most of its time was per-forward overhead. An evaluation forward now reads at
least `EVAL_TOKENS` tokens; long windows keep the training batch (`bench/bench_eval.py`). The
nats summed over the split do not depend on the batch beyond float rounding, in the trainer and in a pack alike.
"""

from __future__ import annotations

import pytest
import torch

from tlmsearch.configs.resolve import resolve_model
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.data import prepare
from tlmsearch.models import build_model
from tlmsearch.profiles import ProfileSpec
from tlmsearch.training.trainer import EVAL_TOKENS, eval_batch, resolve_vocab, val_nats, val_sets


@pytest.mark.parametrize(
    ("batch", "seq_len", "expected"),
    [(8, 32, 32), (2, 32, 32), (2, 128, 8), (16, 128, 16), (4, 1024, 4), (1, 4096, 1), (64, 16, 64)],
)
def test_an_evaluation_forward_reads_at_least_eval_tokens_or_the_training_batch(
    batch: int, seq_len: int, expected: int
) -> None:
    assert eval_batch(TrainConfig(batch_size=batch), seq_len) == expected
    assert expected * seq_len >= min(EVAL_TOKENS, batch * seq_len)


@pytest.mark.parametrize("arch", ["transformer", "titans"])
def test_the_whole_split_sums_to_the_same_nats_at_any_batch(arch: str) -> None:
    data_cfg = DataConfig(corpus="pydoc")
    model_cfg = resolve_vocab(resolve_model("tiny", arch, {"n_layers": 2}, ProfileSpec.parse("uniform"))[2], data_cfg)
    data = prepare(data_cfg)
    model = build_model(model_cfg, seed=0).double()
    _, (windows, _) = val_sets(data, model_cfg.seq_len, TrainConfig(final_eval_windows=-1), torch.device("cpu"))
    windows = windows[:96]
    one = val_nats(model, windows, 1)
    for batch in (8, eval_batch(TrainConfig(batch_size=8), model_cfg.seq_len), 96):
        assert val_nats(model, windows, batch) == pytest.approx(one, rel=1e-12)
