"""Export of a model with per-layer attention heads or block (residual-stream) widths: the native
format carries them; every format that writes per-layer MLP widths only refuses in one line naming
the axis (its readers would build n_heads and d_model in every layer, a different model) instead of
writing a config that silently drops them."""

from __future__ import annotations

import pytest

from tlmsearch.configs.presets import preset
from tlmsearch.errors import UserError
from tlmsearch.export.formats import FORMATS
from tlmsearch.export.writer import ExportInput

WIDTHS = (256, 256, 512, 512)
CARRY_EVERY_AXIS = ("native", "hf")  # hf: tests/unit/test_export_hf.py


def _input(**heads: tuple[int, ...]) -> ExportInput:
    p = preset("cpu-s")  # 8 layers of d 128, 4 heads; 4 layers here, widths multiples of 256
    model = p.model_config("transformer", WIDTHS, n_layers=4, **heads)
    return ExportInput(model, WIDTHS)


@pytest.mark.parametrize("name", [n for n in FORMATS if n not in CARRY_EVERY_AXIS])
def test_formats_without_per_layer_heads_refuse_them(name: str) -> None:
    with pytest.raises(UserError, match=r"^[^\n]*per-layer attention heads[^\n]*export it as native$") as err:
        FORMATS[name].write(_input(attn_heads=(8, 4, 4, 2), kv_heads=(2, 2, 1, 1)))
    assert f"'{name}'" in str(err.value) and "attn_heads=[8, 4, 4, 2]" in str(err.value)
    doc, _ = FORMATS[name].write(_input())  # the uniform model still exports
    assert FORMATS[name].decode(doc) == WIDTHS


def test_hf_carries_the_heads_and_block_widths() -> None:
    doc, _ = FORMATS["hf"].write(_input(block_widths=(256, 128, 64, 256), kv_heads=(4, 2, 1, 2)))
    assert doc["block_widths"] == [256, 128, 64, 256] and doc["key_value_heads"] == [4, 2, 1, 2]
    assert doc["query_heads"] == [8, 4, 2, 8] and FORMATS["hf"].decode(doc) == WIDTHS  # heads follow the blocks


def test_native_carries_the_heads() -> None:
    doc, notes = FORMATS["native"].write(_input(attn_heads=(8, 4, 4, 2), kv_heads=(2, 2, 1, 1)))
    assert doc["model"]["attn_heads"] == [8, 4, 4, 2] and doc["model"]["kv_heads"] == [2, 2, 1, 1]
    assert FORMATS["native"].decode(doc) == WIDTHS and notes == []
    uniform, _ = FORMATS["native"].write(_input())
    assert "attn_heads" not in uniform["model"]  # as native files were before per-layer heads


@pytest.mark.parametrize("name", [n for n in FORMATS if n not in CARRY_EVERY_AXIS])
def test_formats_without_per_layer_block_widths_refuse_them(name: str) -> None:
    """A model with per-layer residual widths (heads following them) is refused naming that axis."""
    with pytest.raises(
        UserError, match=r"^[^\n]*per-layer block \(residual-stream\) widths[^\n]*export it as native$"
    ) as err:
        FORMATS[name].write(_input(block_widths=(256, 128, 64, 256)))
    assert f"'{name}'" in str(err.value) and "block_widths=[256, 128, 64, 256]" in str(err.value)


def test_native_carries_the_block_widths() -> None:
    doc, notes = FORMATS["native"].write(_input(block_widths=(256, 128, 64, 256), kv_heads=(4, 2, 1, 2)))
    assert doc["model"]["block_widths"] == [256, 128, 64, 256] and doc["model"]["kv_heads"] == [4, 2, 1, 2]
    assert FORMATS["native"].decode(doc) == WIDTHS and notes == []
    uniform, _ = FORMATS["native"].write(_input())
    assert "block_widths" not in uniform["model"]  # as native files were before block widths


KV = (4, 2, 1, 2)  # per-layer key/value heads under cpu-s's 4 query heads in every layer


@pytest.mark.parametrize(
    ("name", "field", "expected"),
    [("nemotron-nas", "n_heads_in_group", [1, 2, 4, 2]), ("megatron", "num_query_groups", list(KV))],
)
def test_block_config_formats_carry_per_layer_kv_heads(name: str, field: str, expected: list[int]) -> None:
    """DeciLM's and Megatron's block configs have a per-layer attention field (query heads per KV
    head, or KV groups): per-layer KV heads under uniform query heads are written, widths exact."""
    doc, _ = FORMATS[name].write(_input(kv_heads=KV))
    assert [b["attention"][field] for b in doc["block_configs"]] == expected
    assert doc["num_attention_heads"] == 4 and FORMATS[name].decode(doc) == WIDTHS
    uniform, _ = FORMATS[name].write(_input())  # the uniform model: every layer's KV heads = its query heads
    every = [1] * 4 if field == "n_heads_in_group" else [4] * 4
    assert [b["attention"][field] for b in uniform["block_configs"]] == every


@pytest.mark.parametrize("name", ["nemotron-nas", "megatron"])
def test_block_config_formats_refuse_per_layer_query_heads_naming_the_axis(name: str) -> None:
    with pytest.raises(UserError, match=r"^[^\n]*per-layer key/value heads[^\n]*query heads attn_heads=\[8, 4, 4, 2\]"):
        FORMATS[name].write(_input(attn_heads=(8, 4, 4, 2)))


@pytest.mark.parametrize("name", ["openelm", "gemma3n", "widths"])
def test_formats_without_per_layer_kv_heads_refuse_them_naming_the_axis(name: str) -> None:
    with pytest.raises(UserError, match=r"^[^\n]*key/value heads kv_heads=\[4, 2, 1, 2\][^\n]*export it as native$"):
        FORMATS[name].write(_input(kv_heads=KV))
