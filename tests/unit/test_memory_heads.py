"""The training-memory estimate with per-layer attention heads stays an under-count of the
parameters (`validate.estimate_training_bytes`), follows the heads both ways, and is unchanged
for uniform heads."""

from __future__ import annotations

import pytest

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import ARCHITECTURE_NAMES
from tlmsearch.core.validate import estimate_training_bytes
from tlmsearch.models import count_params

P = preset("cpu-xs")  # d 64, 6 layers, 4 heads of 16
WIDTHS = (288, 256, 192, 160, 128, 128)
FEWER = {"attn_heads": (1, 1, 2, 2, 1, 1), "kv_heads": (1, 1, 1, 1, 1, 1)}
MORE = {"attn_heads": (8, 8, 6, 6, 4, 4), "kv_heads": (8, 4, 6, 3, 4, 2)}


def _params_in_estimate(cfg: object) -> int:
    """The parameters the estimate counts: its bytes at batch 0 (no activations) / 16."""
    return estimate_training_bytes(cfg, 0, 1) // 16


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
@pytest.mark.parametrize("heads", [{}, FEWER, MORE], ids=["uniform", "fewer", "more"])
def test_the_estimate_under_counts_parameters(arch: str, heads: dict[str, tuple[int, ...]]) -> None:
    cfg = P.model_config(arch, WIDTHS, **heads)
    assert _params_in_estimate(cfg) <= count_params(cfg).total


def test_the_estimate_follows_the_heads() -> None:
    uniform, fewer, more = (P.model_config("transformer", WIDTHS, **h) for h in ({}, FEWER, MORE))
    assert _params_in_estimate(uniform) == count_params(uniform).total  # the Transformer is all common parts
    assert _params_in_estimate(fewer) == count_params(fewer).total
    assert _params_in_estimate(more) == count_params(more).total
    sizes = [estimate_training_bytes(c, 8, 128) for c in (fewer, uniform, more)]
    assert sizes[0] < sizes[1] < sizes[2]
    # uniform: the formula as written before per-layer heads (8 d + 3 w + heads x seq per layer and token)
    d, seq = 64, 128
    params = 256 * d + sum(4 * d * d + 3 * d * w + 2 * d for w in WIDTHS) + d
    activations = 8 * seq * (sum(8 * d + 3 * w + 4 * seq for w in WIDTHS) * 4 + 2 * 256 * 4)
    assert sizes[1] == 16 * params + activations


@pytest.mark.parametrize("arch", ["transformer", "gated_attention"])
def test_the_estimate_follows_block_widths(arch: str) -> None:
    """Per-layer block widths: each layer's parameters and activations at its own width, so the
    estimate stays an under-count (exact for the Transformer) when blocks narrow and follows them."""
    narrow = P.model_config(arch, WIDTHS, block_widths=(64, 48, 32, 16, 32, 64))
    wide = P.model_config(arch, WIDTHS, block_widths=(128, 96, 64, 64, 96, 128))
    uniform = P.model_config(arch, WIDTHS)
    for cfg in (narrow, wide):
        assert _params_in_estimate(cfg) <= count_params(cfg).total
        if arch == "transformer":
            assert _params_in_estimate(cfg) == count_params(cfg).total
    sizes = [estimate_training_bytes(c, 8, 128) for c in (narrow, uniform, wide)]
    assert sizes[0] < sizes[1] < sizes[2]
