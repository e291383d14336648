"""The analytic training FLOPs (`flops_per_token`) against torch's FLOP counter.

One training step (forward, loss, backward) of every family and option runs under
`torch.utils.flop_counter.FlopCounterMode` with the math attention backend, which computes
attention from plain matrix products the counter sees. The counter counts matrix products and
convolutions, two FLOPs per multiply-add, as `tlmsearch.models.counts` does.

Counter artefact corrected here: torch's formula for the backward of a convolution counts the
weight gradient of a grouped convolution as if every output channel saw every input channel,
`groups` times too many (for Titans' depthwise q/k/v convolutions: 3d times). The corrected
formula below counts that gradient like the forward convolution, which it mirrors (the same
multiply-adds: each tap meets each output position once); the input gradient's formula is
already right.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode, conv_flop_count, get_shape

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import ModelConfig
from tlmsearch.models import build_model, flops_per_token

aten = torch.ops.aten


def conv_backward_flops(
    grad_out_shape: Any,
    x_shape: Any,
    w_shape: Any,
    _bias: Any,
    _stride: Any,
    _padding: Any,
    _dilation: Any,
    transposed: bool,
    _output_padding: Any,
    _groups: int,
    output_mask: Any,
    out_shape: Any,
    **kwargs: Any,
) -> int:
    """`convolution_backward` FLOPs with the weight gradient counted like the forward."""
    assert not transposed  # the models have no transposed convolution
    flops = 0
    if output_mask[0]:  # grad_input: a transposed convolution of grad_out with the weight
        flops += conv_flop_count(grad_out_shape, w_shape, get_shape(out_shape[0]), True)
    if output_mask[1]:  # grad_weight: the forward's multiply-adds (torch's formula: x groups)
        flops += conv_flop_count(x_shape, w_shape, grad_out_shape, False)
    return flops


def counted_flops_per_token(cfg: ModelConfig, *, corrected: bool = True, batch: int = 2) -> float:
    """FLOPs of one training step counted by torch, per token."""
    torch.manual_seed(0)
    model = build_model(cfg, seed=0)
    idx = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len))
    mapping = {aten.convolution_backward: conv_backward_flops} if corrected else {}
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False, custom_mapping=mapping) as counter:
        logits = model(idx)
        F.cross_entropy(logits.reshape(-1, cfg.vocab_size), idx.reshape(-1)).backward()
    return counter.get_total_flops() / (batch * cfg.seq_len)


# vocab 64 so that the LM head does not hide the blocks' terms in the total
TINY = preset("tiny")
CASES: dict[str, tuple[str, dict[str, Any]]] = {  # (arch, its options)
    "transformer": ("transformer", {}),
    "gated_attention": ("gated_attention", {}),
    "gated_attention/headwise": ("gated_attention", {"gate": "headwise"}),
    "titans/mag": ("titans", {}),
    "titans/mag full causal (window 0)": ("titans", {"window": 0}),
    "titans/mag window 8": ("titans", {"window": 8}),
    "titans/mag window 5 (padded blocks)": ("titans", {"window": 5}),
    "titans/mag window 64 >= T": ("titans", {"window": 64}),
    "titans/mal": ("titans", {"titans_variant": "mal"}),
    "titans/mal full causal": ("titans", {"titans_variant": "mal", "window": 0}),
    "titans/no persistent, 1 head, x3": ("titans", {"n_persistent": 0, "mem_heads": 1, "mem_expansion": 3}),
    "titans/chunk 8, 6 persistent": ("titans", {"mem_chunk": 8, "n_persistent": 6}),
    "hope_attention": ("hope_attention", {}),
    "hope_attention/period 12 (padded)": ("hope_attention", {"cms_periods": (12, 0)}),
    "hope_attention/3 levels": (
        "hope_attention",
        {"cms_levels": 3, "cms_periods": (4, 16, 0), "cms_shares": (0.2, 0.3, 0.5)},
    ),
    "hope_attention/1 frozen level": ("hope_attention", {"cms_levels": 1, "cms_periods": (0,)}),
}


def case_config(arch: str, options: dict[str, Any]) -> ModelConfig:
    return TINY.model_config(arch, (96, 32), vocab_size=64, options=options)


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


@pytest.mark.parametrize("case", list(CASES))
def test_flops_match_the_counter(case: str) -> None:
    cfg = case_config(*CASES[case])
    analytic, counted = flops_per_token(cfg), counted_flops_per_token(cfg)
    # exact (the acceptance bound is 1%): a term left out of a tiny model would hide inside 1%
    assert analytic == pytest.approx(counted, rel=1e-9), f"{case}: analytic {analytic:.0f}, counted {counted:.0f}"


# per-layer heads (attn_heads, kv_heads) for a case of every family and variant: more and fewer
# query heads, grouped-query and multi-query attention, Titans' gate resampled both ways
HEAD_CASES: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "transformer": ((3, 1), ()),
    "gated_attention": ((4, 2), (2, 1)),
    "gated_attention/headwise": ((1, 4), (1, 2)),
    "titans/mag": ((3, 1), (1, 1)),
    "titans/mag window 5 (padded blocks)": ((4, 2), (2, 2)),
    "titans/mal": ((1, 3), ()),
    "hope_attention": ((4, 1), (2, 1)),
    "hope_attention/3 levels": ((2, 6), (2, 3)),
}


@pytest.mark.parametrize("case", list(HEAD_CASES))
def test_flops_with_per_layer_heads_match_the_counter(case: str) -> None:
    attn_heads, kv_heads = HEAD_CASES[case]
    cfg = case_config(*CASES[case]).replace(attn_heads=attn_heads, kv_heads=kv_heads)
    assert not cfg.uniform_attention
    analytic, counted = flops_per_token(cfg), counted_flops_per_token(cfg)
    assert analytic == pytest.approx(counted, rel=1e-9), f"{case}: analytic {analytic:.0f}, counted {counted:.0f}"


# per-layer block widths (Transformer and Gated Attention): random shapes of 1-5 layers, widths
# 16..96 around d = 32 (whole heads), heads following the width or not, grouped key/values
BLOCK_WIDTH_CASES = ["transformer", "gated_attention", "gated_attention/headwise"]


@pytest.mark.parametrize("case", BLOCK_WIDTH_CASES)
def test_flops_with_block_widths_match_the_counter(case: str) -> None:
    rng = random.Random(BLOCK_WIDTH_CASES.index(case))
    for _ in range(4):
        layers = rng.randint(1, 5)
        widths = tuple(16 * rng.randint(1, 6) for _ in range(layers))
        heads = tuple(rng.choice([w // 16, rng.randint(1, 5)]) for w in widths)
        kv = tuple(rng.choice([g for g in range(1, h + 1) if h % g == 0]) for h in heads)
        mlp = tuple(8 * rng.randint(1, 16) for _ in range(layers))
        arch, options = CASES[case]
        cfg = TINY.model_config(
            arch,
            mlp,
            n_layers=layers,
            vocab_size=64,
            options=options,
            block_widths=widths,
            attn_heads=heads,
            kv_heads=kv,
        )
        analytic, counted = flops_per_token(cfg), counted_flops_per_token(cfg)
        assert analytic == pytest.approx(counted, rel=1e-9), f"{cfg}: analytic {analytic:.0f}, counted {counted:.0f}"


def test_the_check_can_fail() -> None:
    """Without the correction the counter over-counts Titans' depthwise convolutions by far,
    and a model whose count leaves out a term (the persistent tokens) is caught."""
    cfg = case_config("titans", {})
    assert counted_flops_per_token(cfg, corrected=False) > 1.05 * flops_per_token(cfg)
    fewer = case_config("titans", {"n_persistent": 0})
    assert flops_per_token(fewer) < 0.99 * counted_flops_per_token(cfg)


if __name__ == "__main__":  # pragma: no cover - `python tests/unit/models/test_flops.py` prints the table
    torch.set_num_threads(1)
    print(f"{'family/option':36s} {'analytic':>12s} {'counted':>12s} {'ratio':>8s}")
    for name, (arch, opts) in CASES.items():
        c = case_config(arch, opts)
        a, n = flops_per_token(c), counted_flops_per_token(c)
        print(f"{name:36s} {a:12.0f} {n:12.0f} {a / n:8.5f}")
