"""What a format's writer gets (`ExportInput`) and gives (`Writer`: the document and notes), and
the refusal every widths-only format makes (`mlp_widths_only`): a model whose per-layer block
widths or attention heads the format does not carry is refused in one line naming the axis
(export it as native, which carries every axis). The table of formats is `export.formats`.

Pure Python: no torch, no transformers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tlmsearch.core.base import ModelConfig
from tlmsearch.errors import UserError


@dataclass(frozen=True)
class ExportInput:
    """What a writer gets: the model, its widths and what a format may record beside them."""

    model: ModelConfig
    widths: tuple[int, ...]
    train: Mapping[str, Any] = field(default_factory=dict)  # TrainConfig fields (native)
    data: Mapping[str, Any] = field(default_factory=dict)  # DataConfig fields (native)
    source: Mapping[str, Any] = field(default_factory=dict)  # run dir, trial id, profile, ...
    divisor: int | None = None  # for a format with a `Format.divisor`; None = the gcd of the widths (exact)


Writer = Callable[[ExportInput], tuple[Any, list[str]]]  # -> (document, notes)


OWN_MODULES = {  # what a family adds to the Transformer, as other_family_note names it
    "gated_attention": "its attention output gate",
    "titans": "its neural memory",
    "hope_attention": "its memory modules",
}


def other_family_note(name: str, model: ModelConfig) -> str:
    """The line a format whose reader builds a plain Llama-style Transformer says of a model of
    another family (Gated Attention's output gate, Titans' and Hope's memory); "" for a Transformer."""
    if model.arch == "transformer":
        return ""
    trained = "native or hf" if model.arch == "gated_attention" else "native"
    own = OWN_MODULES.get(model.arch, "its own modules")
    return (
        f"arch={model.arch}: {name}'s reader builds a plain Transformer with these widths and heads, without "
        f"{own}: the schedule carries over, the trained model does not (for that: --format {trained})"
    )


def mlp_widths_only(name: str, write: Writer, *, kv_heads: str = "", builds_model: bool = True) -> Writer:
    """`write`, refusing in one line, naming the axis, a model with per-layer block widths
    (`block_widths`) or attention heads (`attn_heads`, `kv_heads`) that format `name` does not
    carry: its readers would build d_model and n_heads in every layer. `kv_heads` names the
    format's per-layer key/value-head field where it has one (DeciLM's and Megatron's block
    configs): then per-layer KV heads under uniform query heads are written, not refused. A format
    whose reader builds a model (`builds_model`) says in a note when the model is of another family
    than the Transformer its reader builds (`other_family_note`)."""

    def checked(x: ExportInput) -> tuple[Any, list[str]]:
        model = x.model
        if model.block_widths:
            raise UserError(
                f"export format {name!r} writes per-layer MLP widths only, not the model's per-layer block "
                f"(residual-stream) widths (block_widths={list(model.block_widths)}); its readers build "
                f"d_model={model.d_model} in every layer: export it as native"
            )
        if model.attn_heads:
            query = [model.query_heads(layer) for layer in range(model.n_layers)]
            kv = [model.key_value_heads(layer) for layer in range(model.n_layers)]
            carries = f"per-layer key/value heads ({kv_heads}) but" if kv_heads else "per-layer MLP widths only,"
            raise UserError(
                f"export format {name!r} writes {carries} not the model's per-layer attention heads: query heads "
                f"attn_heads={query} (kv_heads={kv}); its readers build {model.n_heads} query heads in every "
                "layer: export it as native"
            )
        if model.kv_heads and not kv_heads:
            raise UserError(
                f"export format {name!r} writes per-layer MLP widths only, not the model's per-layer attention heads: "
                f"key/value heads kv_heads={list(model.kv_heads)}; its readers build {model.n_heads} in every layer: "
                "export it as native"
            )
        doc, notes = write(x)
        other = other_family_note(name, model) if builds_model else ""
        return doc, [*notes, other] if other else notes

    return checked


def kv_heads_of(model: ModelConfig) -> list[int]:
    """Key/value heads of every layer (`ModelConfig.key_value_heads`: n_heads unless per-layer)."""
    return [model.key_value_heads(layer) for layer in range(model.n_layers)]


__all__ = ["ExportInput", "Writer", "kv_heads_of", "mlp_widths_only", "other_family_note"]
