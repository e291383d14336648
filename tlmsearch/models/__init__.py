"""The four architecture families, a plain dict registry, and analytic counts.

    model = build_model(cfg)            # cfg: tlmsearch.ModelConfig
    logits = model(idx)                 # idx (B, T) long -> logits (B, T, vocab_size)

Every family is `embedding -> blocks -> RMSNorm -> LM head`; block l is built as
`Block(cfg, l)` and its MLP has hidden width `cfg.mlp_widths[l]` (Hope-attention: its CMS
levels' widths sum to it). `count_params(cfg)` and `flops_per_token(cfg)` are analytic and
need no model. Importing this package does not import torch: `ARCHITECTURES`, `build_model`
and `mlp_hidden_sizes` are loaded from `tlmsearch.models.registry` on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tlmsearch.config import ARCHITECTURE_NAMES
from tlmsearch.models.counts import ParamCounts, cms_level_widths, count_params, flops_per_token

_LAZY = {"ARCHITECTURES", "build_model", "mlp_hidden_sizes"}

__all__ = [
    "ARCHITECTURES",
    "ARCHITECTURE_NAMES",
    "ParamCounts",
    "build_model",
    "cms_level_widths",
    "count_params",
    "flops_per_token",
    "mlp_hidden_sizes",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'tlmsearch.models' has no attribute {name!r}")
    value = getattr(importlib.import_module("tlmsearch.models.registry"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.models.registry import ARCHITECTURES, build_model, mlp_hidden_sizes
