"""The driver's side of `configs.trial`: each trial's Tune config gets its resolved `TrialSpec`.

    config = with_spec(cfg, {"profile": "cosine", "seed": 3, "number": 7})
    config["spec"]   # TrialSpec.to_dict(): what the worker trains, exactly

Called where a trial's Tune config is made (the searcher's `suggest`, the fixed trials'
`fit_fixed`, the packs of `pack_runs`). The tokenizer's vocabulary comes from the prepared
corpus (`data.prepare`, once per data config in this process): the model in the spec is the
one trained, so the worker sets nothing.
"""

from __future__ import annotations

from typing import Any

from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.trial import SPEC, TrialSpec, trial_spec
from tlmsearch.core.base import DataConfig
from tlmsearch.data import prepare

_VOCAB: dict[str, int] = {}  # DataConfig JSON -> the tokenizer's vocabulary size


def data_vocab(data: DataConfig) -> int:
    """The vocabulary size of `data`'s tokenizer on its corpus (prepares the corpus once)."""
    key = data.to_json(indent=None)
    if key not in _VOCAB:
        _VOCAB[key] = int(prepare(data).vocab_size)
    return _VOCAB[key]


def spec_of(cfg: SearchConfig, config: dict[str, Any]) -> TrialSpec:
    """The trial of Tune config `config` under search `cfg`, resolved (`configs.trial.trial_spec`)."""
    return trial_spec(cfg, config, data_vocab(cfg.data))


def with_spec(cfg: SearchConfig, config: dict[str, Any]) -> dict[str, Any]:
    """`config` with its resolved spec under `SPEC` (any spec it held is built again)."""
    small = {k: v for k, v in config.items() if k != SPEC}
    return {**small, SPEC: spec_of(cfg, small).to_dict()}
