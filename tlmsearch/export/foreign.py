"""The configs of other model families' readers: DeciLM / Nemotron-NAS, OpenELM and Gemma 3n.
Each is a writer (`ExportInput` -> config.json and notes) and the reader's documented rule for
the widths it builds from that file (`decode_*`); `export.formats` puts them in its table.

Readers' rules:
- nemotron-nas: `block_configs[i].ffn.ffn_mult`; the reader builds
  `roundup_to_256(int(2 * ffn_mult * hidden_size / 3))`, exact for multiples of 256.
  Per-layer key/value heads go to `block_configs[i].attention.n_heads_in_group` (query heads per
  KV head); the query heads are one global `num_attention_heads`.
- openelm: per-layer `ffn_multipliers`; the reader builds
  `make_divisible(ffn_multipliers[i] * model_dim, ffn_dim_divisor)`. A two-entry list is read as
  linspace end points rounded to 2 decimals, which matters for 2-layer models.
- gemma3n: transformers `Gemma3nTextConfig` with a per-layer `intermediate_size` list: exact
  (widths only: Gemma 3n's other components are not ours).

transformers has no built-in class for `openelm` or `nemotron-nas`: their configuration and
modelling code lives in the reference checkpoints' Hub repositories. The written config.json
therefore carries an `auto_map` naming that code as `<repo>--<module>.<class>` (the form
transformers resolves against another repository), so `AutoConfig.from_pretrained(dir,
trust_remote_code=True)` finds it.

Pure Python: no torch, no transformers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import reduce
from typing import Any

from tlmsearch.export.writer import ExportInput, kv_heads_of

NEMOTRON_CODE = "nvidia/Llama-3_1-Nemotron-51B-Instruct"  # Hub repository of DeciLM's config/model code
OPENELM_CODE = "apple/OpenELM-270M"  # Hub repository of OpenELM's config/model code
OPENELM_READERS = (
    "OpenELM's readers are Apple's code on the Hub (needs network) and mlx-lm (needs MLX, built for Apple silicon; "
    "it does not run on Linux CPU machines); the file carries every field mlx-lm 0.32.2 requires"
)


def _auto_map(repo: str, config: str, model: str) -> dict[str, str]:
    return {"AutoConfig": f"{repo}--{config}", "AutoModelForCausalLM": f"{repo}--{model}"}


def write_nemotron(x: ExportInput) -> tuple[dict[str, Any], list[str]]:
    # lazy: a format's own module loads when it writes, not for the --format choices (help path)
    from tlmsearch.export.megatron import ROPE_SCALING

    model, h = x.model, x.model.d_model
    # DeciLM's attention per block: num_attention_heads query heads in groups of n_heads_in_group,
    # one key/value head a group, so a layer's KV heads G_l are n_heads / n_heads_in_group
    blocks = [
        {
            "attention": {"no_op": False, "replace_with_linear": False, "n_heads_in_group": model.n_heads // g},
            "ffn": {"no_op": False, "replace_with_linear": False, "ffn_mult": 1.5 * w / h},
        }
        for w, g in zip(x.widths, kv_heads_of(model), strict=True)
    ]
    doc = {
        "architectures": ["DeciLMForCausalLM"],
        "model_type": "nemotron-nas",
        "auto_map": _auto_map(NEMOTRON_CODE, "configuration_decilm.DeciLMConfig", "modeling_decilm.DeciLMForCausalLM"),
        "hidden_size": h,
        "num_hidden_layers": model.n_layers,
        "num_attention_heads": model.n_heads,
        "vocab_size": model.vocab_size,
        "max_position_embeddings": model.seq_len,
        "rms_norm_eps": model.norm_eps,
        "rope_theta": model.rope_theta,
        "tie_word_embeddings": model.tie_embeddings,
        "hidden_act": "silu",
        "rope_scaling": dict(ROPE_SCALING),  # factor 1: no scaling; Megatron-LM's validation reads it
        "block_configs": blocks,
        "tlmsearch": {**x.source, "mlp_widths": list(x.widths)},
    }
    notes = [
        "Megatron reads this file too (--heterogeneous-layers-config-path, with the flags `--format megatron` "
        "prints); RoPE scaling factor 1.0 changes nothing"
    ]
    if any(w % 256 for w in x.widths):
        notes.append(
            "Nemotron-NAS readers round every FFN width up to a multiple of 256; exact only for "
            "profiles whose widths are multiples of 256 (use a budget with multiple_of=256)"
        )
    return doc, notes


def write_openelm(x: ExportInput) -> tuple[dict[str, Any], list[str]]:
    model = x.model
    div = x.divisor or reduce(math.gcd, x.widths)
    doc = {
        "architectures": ["OpenELMForCausalLM"],
        "model_type": "openelm",
        "auto_map": _auto_map(
            OPENELM_CODE, "configuration_openelm.OpenELMConfig", "modeling_openelm.OpenELMForCausalLM"
        ),
        "model_dim": model.d_model,
        "num_transformer_layers": model.n_layers,
        "head_dim": model.head_dim,
        # per layer, as mlx-lm reads them (Apple's code derives the same from qkv_multipliers and num_gqa_groups)
        "num_query_heads": [model.n_heads] * model.n_layers,
        "num_kv_heads": [model.n_heads] * model.n_layers,
        "normalize_qk_projections": False,  # tlmsearch's attention has no QK-norm (mlx-lm's default is on)
        "rms_norm_eps": model.norm_eps,
        "num_gqa_groups": 1,
        "qkv_multipliers": 1.0,
        "ffn_multipliers": [w / model.d_model for w in x.widths],
        "ffn_with_glu": True,
        "ffn_dim_divisor": div,
        "activation_fn_name": "swish",
        "normalization_layer_name": "rms_norm",
        "share_input_output_layers": model.tie_embeddings,
        "vocab_size": model.vocab_size,
        "max_context_length": model.seq_len,
        "rope_freq_constant": int(model.rope_theta) if float(model.rope_theta).is_integer() else model.rope_theta,
        "tlmsearch": {**x.source, "mlp_widths": list(x.widths)},
    }
    notes = [
        f"ffn_dim_divisor={div}; normalize_qk_projections=false (no QK-norm, as trained)",
        f"not loaded in tlmsearch's tests: {OPENELM_READERS}",
    ]
    if model.n_layers == 2:
        notes.append("Apple's OpenELM code reads a 2-entry ffn_multipliers list as linspace end points (2 decimals)")
    return doc, notes


GEMMA3N_DIFFERS = (
    "transformers builds Gemma 3n, not the trained model: the MLP widths, heads and RoPE theta ({theta:g}) carry "
    "over, but it adds AltUp (4 streams), LAuReL (rank 64), per-layer input embeddings and final-logit softcapping "
    "(30), so it has more parameters and computes otherwise (for the trained model: --format hf)"
)


def write_gemma3n(x: ExportInput) -> tuple[dict[str, Any], list[str]]:
    model, n = x.model, x.model.n_layers
    doc = {
        "model_type": "gemma3n_text",
        "hidden_size": model.d_model,
        "num_hidden_layers": n,
        "intermediate_size": list(x.widths),
        "num_attention_heads": model.n_heads,
        "num_key_value_heads": model.n_heads,
        "head_dim": model.head_dim,
        "vocab_size": model.vocab_size,
        "vocab_size_per_layer_input": model.vocab_size,
        "max_position_embeddings": model.seq_len,
        "rms_norm_eps": model.norm_eps,
        "rope_theta": model.rope_theta,  # Gemma 3n's own default is 1e6 (transformers 5: full_attention's theta)
        "tie_word_embeddings": model.tie_embeddings,
        "hidden_activation": "silu",
        "layer_types": ["full_attention"] * n,
        "num_kv_shared_layers": 0,
        "activation_sparsity_pattern": [0.0] * n,
    }
    return doc, [GEMMA3N_DIFFERS.format(theta=model.rope_theta)]


# ----------------------------------------------------------------------------- readers' rules


def _find_multiple(n: int, k: int) -> int:
    return n if n % k == 0 else n + k - (n % k)


def make_divisible(v: float, divisor: int, min_value: float | None = None) -> int:
    """OpenELM's (MobileNet's) rounding: nearest multiple of `divisor`, never more than 10% down."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return int(new_v)


def decode_nemotron(doc: Any) -> tuple[int, ...]:
    h = doc["hidden_size"]
    return tuple(_find_multiple(int(2 * b["ffn"]["ffn_mult"] * h / 3), 256) for b in doc["block_configs"])


def decode_openelm(doc: Any) -> tuple[int, ...]:
    mults: Sequence[float] = doc["ffn_multipliers"]
    n = doc["num_transformer_layers"]
    if isinstance(mults, int | float):
        mults = [float(mults)] * n
    elif len(mults) == 2:  # OpenELM: two numbers are linspace end points, rounded to 2 decimals
        mults = [round(mults[0] + (mults[1] - mults[0]) * i / max(n - 1, 1), 2) for i in range(n)]
    return tuple(make_divisible(m * doc["model_dim"], doc["ffn_dim_divisor"]) for m in mults)


def decode_gemma3n(doc: Any) -> tuple[int, ...]:
    size = doc["intermediate_size"]
    return tuple(int(w) for w in size) if isinstance(size, list) else (int(size),) * doc["num_hidden_layers"]


__all__ = [
    "GEMMA3N_DIFFERS",
    "NEMOTRON_CODE",
    "OPENELM_CODE",
    "OPENELM_READERS",
    "decode_gemma3n",
    "decode_nemotron",
    "decode_openelm",
    "make_divisible",
    "write_gemma3n",
    "write_nemotron",
    "write_openelm",
]
