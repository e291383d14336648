"""Counts of Gated Attention (`gated_attention.py`); torch-free, see `spec.py`.

The Transformer's block with the input projection widened by the gate logits: d -> 3d + g,
g = d (elementwise G1 gate, default) or g = n_heads (headwise); with per-layer heads H_l, G_l the
projection is d -> (H_l + 2 G_l) D + g_l, g_l = H_l D or H_l, and W_o is H_l D -> d. With per-layer
block widths (`block_widths`) every d of block l is its width w_l (norms, the projection's
input, W_o's output).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from tlmsearch.core.architectures import ArchSpec, attention_flops, linear_flops
from tlmsearch.core.base import ArchOptions, check_choice, check_field_types
from tlmsearch.models.counts import attention_params, attention_width, block_width, qkv_width

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.core.base import ModelConfig


GATES: tuple[str, ...] = ("elementwise", "headwise")


@dataclasses.dataclass(frozen=True, kw_only=True)
class GatedAttentionOptions(ArchOptions):
    """Options of gated_attention."""

    # "elementwise" (G1, one gate per channel, the paper's recommended variant) or "headwise" (one per head)
    gate: str = "elementwise"

    def __post_init__(self) -> None:
        check_field_types(self, "options.")
        check_choice("options.gate", self.gate, GATES)


def gate_width(cfg: ModelConfig, layer: int) -> int:
    """Gate logits of layer `layer`: H_l D (elementwise) or H_l (headwise)."""
    elementwise = GatedAttentionOptions.of(cfg).gate == "elementwise"
    return attention_width(cfg, layer) if elementwise else cfg.query_heads(layer)


def block_params(cfg: ModelConfig, layer: int) -> int:
    w = block_width(cfg, layer)
    return 2 * w + attention_params(cfg, layer) + w * gate_width(cfg, layer)


def block_flops(cfg: ModelConfig, layer: int) -> float:
    t, w, a = cfg.seq_len, block_width(cfg, layer), attention_width(cfg, layer)
    projection = linear_flops(t, w, qkv_width(cfg, layer) + gate_width(cfg, layer))
    return projection + attention_flops(t, t, a) + linear_flops(t, a, w)


SPEC: ArchSpec[ModelConfig] = ArchSpec(
    model="tlmsearch.models.gated_attention:GatedAttentionLM",
    summary="Transformer with a sigmoid gate on each head's attention output (Qiu et al. G1)",
    block_params=block_params,
    block_flops=block_flops,
    block_widths=True,
    options=GatedAttentionOptions,
)
