"""A joint architecture's per-layer axes beside its MLP widths, as every view shows them.

A record of a `joint` profile trains a model that may move per-layer query heads, key/value
heads and block (residual-stream) widths (`ModelConfig.attn_heads`, `kv_heads`, `block_widths`).
`layer_axes` writes them out (defaults filled in) and `axes_text` puts them on one line; `tlmsearch
status`, the verification's table, the study's and the ladder's summaries read them from here, so
that a fourth axis is added to the views in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

LAYER_AXES: tuple[str, ...] = ("attn_heads", "kv_heads", "block_widths")  # a joint architecture's other axes


def layer_axes(record: Any) -> dict[str, list[int] | None]:
    """Per-layer query heads, key/value heads and block (residual) widths of a record whose model
    moves any of them (a joint architecture: `ModelConfig.query_heads`, `key_value_heads`,
    `block_width`, defaults written out), each None for a model that keeps the preset's attention
    and width in every layer (or a record written before records held their model)."""
    model = record.model_config
    if model is None or model.uniform_attention:
        return dict.fromkeys(LAYER_AXES)
    layers = range(model.n_layers)
    return {
        "attn_heads": [model.query_heads(layer) for layer in layers],
        "kv_heads": [model.key_value_heads(layer) for layer in layers],
        "block_widths": [model.block_width(layer) for layer in layers],
    }


def axes_text(row: Mapping[str, Any], widths: str = "widths", sep: str = " | ") -> str | None:
    """One line of a joint architecture's per-layer axes beside its MLP widths (`row[widths]`),
    parts joined by `sep`: "mlp 96,80 | query heads 6,2 | kv heads as query | block 32,32"; None
    for a row without them."""
    if row.get("attn_heads") is None:
        return None

    def joined(values: Sequence[int]) -> str:
        return ",".join(str(v) for v in values)

    kv = "as query" if row["kv_heads"] == row["attn_heads"] else joined(row["kv_heads"])
    parts = (f"mlp {joined(row[widths])}", f"query heads {joined(row['attn_heads'])}", f"kv heads {kv}")
    return sep.join((*parts, f"block {joined(row['block_widths'])}"))
