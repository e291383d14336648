"""The Hugging Face format (`--format hf`): a folder transformers loads with
`AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)`.

The folder holds config.json (the model's shape, one entry a layer for the MLP widths, query and
key/value heads and block widths) and `modeling_tlmsearch.py`, tlmsearch's own standalone
Llama-style model with per-layer shapes (`tlmsearch/export/hf_model/`), which computes what
tlmsearch's Transformer and Gated Attention compute, operation for operation; with trained
weights (`tlmsearch.export.hf_weights`), model.safetensors under the same parameter names
prefixed `model.` (the LM head is the embedding when tied).

Pure Python: no torch, no transformers.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from tlmsearch.errors import UserError

HF_ARCHS: tuple[str, ...] = ("transformer", "gated_attention")
MODELING_FILE = "modeling_tlmsearch.py"
WEIGHTS_FILE = "model.safetensors"


def modeling_source() -> str:
    """The text of the modeling file the folder carries."""
    return resources.files("tlmsearch.export.hf_model").joinpath(MODELING_FILE).read_text()


def attention_gate(model: Any) -> str:
    """ "none" for the Transformer; Gated Attention's `options.gate` ("elementwise" or "headwise")."""
    if model.arch == "transformer":
        return "none"
    return str(model.options.gate)


def hf_config(model: Any, widths: tuple[int, ...], source: dict[str, Any]) -> dict[str, Any]:
    """config.json of the folder: `TlmsearchConfig`'s fields (hf_model/modeling_tlmsearch.py)."""
    if model.arch not in HF_ARCHS:
        raise UserError(
            f"export format 'hf' builds {' and '.join(HF_ARCHS)} models; arch={model.arch!r} has no Hugging Face "
            "model here (its memory modules are tlmsearch's own): export it as native"
        )
    n = model.n_layers
    return {
        "architectures": ["TlmsearchForCausalLM"],
        "model_type": "tlmsearch",
        "auto_map": {
            "AutoConfig": "modeling_tlmsearch.TlmsearchConfig",
            "AutoModelForCausalLM": "modeling_tlmsearch.TlmsearchForCausalLM",
        },
        "vocab_size": model.vocab_size,
        "hidden_size": model.d_model,
        "num_hidden_layers": n,
        "num_attention_heads": model.n_heads,
        "head_dim": model.head_dim,
        "intermediate_sizes": list(widths),
        "query_heads": [model.query_heads(layer) for layer in range(n)],
        "key_value_heads": [model.key_value_heads(layer) for layer in range(n)],
        "block_widths": list(model.block_widths) or None,
        "attention_gate": attention_gate(model),
        "rms_norm_eps": model.norm_eps,
        "rope_theta": model.rope_theta,
        "max_position_embeddings": model.seq_len,
        "initializer_range": model.init_std,
        "tie_word_embeddings": model.tie_embeddings,
        "dtype": "float32",
        "tlmsearch": {**source, "arch": model.arch, "mlp_widths": list(widths)},
    }


def decode_hf(doc: Any) -> tuple[int, ...]:
    """The widths the modeling file builds: `intermediate_sizes`, one a layer."""
    return tuple(int(w) for w in doc["intermediate_sizes"])
