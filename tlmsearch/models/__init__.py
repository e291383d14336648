"""The architecture families, their registry, and analytic counts.

    model = build_model(cfg)            # cfg: tlmsearch.ModelConfig
    logits = model(idx)                 # idx (B, T) long -> logits (B, T, vocab_size)

Every family is `embedding -> blocks -> RMSNorm -> LM head`; block l is built as
`Block(cfg, l)` and its MLP has hidden width `cfg.mlp_widths[l]` (Hope-attention: its CMS
levels' widths sum to it). `ARCHITECTURES` (name -> import path of the family's `ArchSpec`,
re-exported from `tlmsearch.core.architectures`) is the one registry; `count_params(cfg)` and
`flops_per_token(cfg)` are exact and need no model. Importing this package does not import
torch: `build_model` and `mlp_hidden_sizes` are loaded from `tlmsearch.models.build` on first
use. How to add a family: `tlmsearch/models/README.md`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tlmsearch.core.architectures import ARCHITECTURE_NAMES, ARCHITECTURES, ArchSpec, architecture
from tlmsearch.models.counts import ParamCounts, count_params, flops_per_token, forward_flops
from tlmsearch.models.hope_attention_spec import cms_level_widths

_LAZY = {"build_model", "mlp_hidden_sizes"}  # they import torch

__all__ = [
    "ARCHITECTURES",
    "ARCHITECTURE_NAMES",
    "ArchSpec",
    "ParamCounts",
    "architecture",
    "build_model",
    "cms_level_widths",
    "count_params",
    "flops_per_token",
    "forward_flops",
    "mlp_hidden_sizes",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'tlmsearch.models' has no attribute {name!r}")
    value = getattr(importlib.import_module("tlmsearch.models.build"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.models.build import build_model, mlp_hidden_sizes
