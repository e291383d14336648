"""OpenELM's and Gemma 3n's exports say what they are.

OpenELM: no reader runs here (Apple's code is on the Hub; mlx-lm needs MLX, built for Apple
silicon), so the export says so, and the file is checked against mlx-lm's reader as read from its
source, mlx-lm 0.32.2, mlx_lm/models/openelm.py: `ModelArgs` requires the fields in
`MLX_LM_REQUIRED` (its `from_dict` drops every other key) and defaults `normalize_qk_projections`
to True; each layer l builds `num_query_heads[l]` query and `num_kv_heads[l]` KV heads of
`head_dim` in one fused qkv_proj, an MLP of make_divisible(ffn_multipliers[l] * model_dim,
ffn_dim_divisor) units (proj_1 gate and up, proj_2 down), RMSNorms of `rms_norm_eps`, RoPE of base
`rope_freq_constant` (not interleaved), a head shared with the embedding when
`share_input_output_layers`.

Gemma 3n: transformers builds its own architecture around the exported widths; the export says so
in one line and sets the RoPE theta the model trained with."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tlmsearch.core.base import ModelConfig
from tlmsearch.export.foreign import make_divisible
from tlmsearch.export.formats import FORMATS
from tlmsearch.export.schedule import export
from tlmsearch.models import count_params

MLX_LM_REQUIRED = (
    "model_type", "head_dim", "num_transformer_layers", "model_dim", "vocab_size", "ffn_dim_divisor",
    "num_query_heads", "num_kv_heads", "ffn_multipliers",
)  # fmt: skip


def _model(**kw: Any) -> ModelConfig:
    base = {"arch": "transformer", "d_model": 64, "n_layers": 4, "n_heads": 4, "mlp_widths": (96, 80, 48, 32)}
    return ModelConfig(seq_len=32, **{**base, **kw})


def mlx_lm_params(doc: dict[str, Any]) -> int:
    """Parameters of the model mlx-lm's OpenELM reader builds from `doc` (its rules, module doc)."""
    d, head = doc["model_dim"], doc["head_dim"]
    total = doc["vocab_size"] * d * (1 if doc.get("share_input_output_layers", True) else 2) + d  # + final norm
    for layer in range(doc["num_transformer_layers"]):
        h, g = doc["num_query_heads"][layer], doc["num_kv_heads"][layer]
        f = make_divisible(doc["ffn_multipliers"][layer] * d, doc["ffn_dim_divisor"])
        qk_norms = 2 * head if doc.get("normalize_qk_projections", True) else 0
        total += (h + 2 * g) * head * d + h * head * d + qk_norms + 3 * d * f + 2 * d
    return total


@pytest.mark.parametrize("tied", [True, False])
def test_openelm_file_is_complete_for_mlx_lm_and_builds_the_trained_shapes(tied: bool) -> None:
    model = _model(tie_embeddings=tied, rope_theta=5000.0, norm_eps=1e-5)
    ex = export(model, "openelm")
    doc = json.loads(ex.text)
    assert all(doc.get(key) is not None for key in MLX_LM_REQUIRED)
    assert doc["num_query_heads"] == [4] * 4 and doc["num_kv_heads"] == [4] * 4
    assert doc["normalize_qk_projections"] is False  # stated: mlx-lm's default would add QK-norm
    assert doc["rope_freq_constant"] == 5000 and doc["rms_norm_eps"] == 1e-5
    assert doc["share_input_output_layers"] is tied
    assert mlx_lm_params(doc) == count_params(model).total
    assert mlx_lm_params({**doc, "normalize_qk_projections": True}) > count_params(model).total  # what it was
    assert any("not loaded in tlmsearch's tests" in n and "Apple silicon" in n for n in ex.notes)
    assert "mlx-lm 0.32.2" in FORMATS["openelm"].checked


@pytest.mark.slow
def test_gemma3n_export_says_in_one_line_what_differs_and_sets_the_rope_theta() -> None:
    transformers = pytest.importorskip("transformers")
    model = _model(rope_theta=10000.0)
    ex = export(model, "gemma3n")
    config = transformers.Gemma3nTextConfig.from_dict(json.loads(ex.text))
    params = getattr(config, "rope_parameters", None)
    theta = params["full_attention"]["rope_theta"] if params else config.rope_theta
    assert theta == 10000.0  # Gemma 3n's own default is 1e6
    differs = [n for n in ex.notes if "not the trained model" in n]
    assert len(differs) == 1 and "\n" not in differs[0]
    assert all(word in differs[0] for word in ("AltUp", "LAuReL", "softcapping", "RoPE theta (10000)"))
    built = transformers.Gemma3nForCausalLM(config)
    assert [layer.mlp.intermediate_size for layer in built.model.layers] == list(model.mlp_widths)
    assert sum(p.numel() for p in built.parameters()) > count_params(model).total  # the extra modules


@pytest.mark.parametrize("fmt", ["megatron", "nemotron-nas", "openelm", "gemma3n"])
@pytest.mark.parametrize(("arch", "own"), [("gated_attention", "attention output gate"), ("titans", "neural memory")])
def test_another_familys_model_is_said_to_lose_its_own_modules(fmt: str, arch: str, own: str) -> None:
    widths = (512, 512) if fmt == "nemotron-nas" else (96, 32)
    model = ModelConfig(arch=arch, d_model=64, n_layers=2, n_heads=4, mlp_widths=widths, seq_len=32)
    said = [n for n in export(model, fmt).notes if n.startswith(f"arch={arch}: ")]
    assert len(said) == 1 and own in said[0] and "plain Transformer" in said[0] and "\n" not in said[0]
    assert ("hf" in said[0]) == (arch == "gated_attention")  # hf builds Gated Attention, not Titans
    plain = ModelConfig(arch="transformer", d_model=64, n_layers=2, n_heads=4, mlp_widths=widths, seq_len=32)
    assert not [n for n in export(plain, fmt).notes if n.startswith("arch=")]
    assert not [n for n in export(model, "widths").notes if n.startswith("arch=")]  # a list: no model
