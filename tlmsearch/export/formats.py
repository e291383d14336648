"""The export formats: ONE table, `FORMATS`, name -> `Format` (like `profiles.FAMILIES`).

A format is a writer (model + widths -> the document a reader reads, plus notes), the reader's
documented rule for the widths it builds from that document (`decode`), when that rule is
exact, and how the document is serialized. `tlmsearch.export.schedule` writes and checks every format
through this table and the CLI's `--format` choices and help read it, so a new format is one
`Format(...)` row here (docs/cli.md prints the table from it).

Readers' rules:
- native: tlmsearch's own `RunConfig` (model + train + data + meta); `tlmsearch train --config`.
- nemotron-nas: DeciLM / Nemotron-NAS `config.json`, `block_configs[i].ffn.ffn_mult`; the reader
  builds `roundup_to_256(int(2 * ffn_mult * hidden_size / 3))`, exact for multiples of 256.
  Per-layer key/value heads go to `block_configs[i].attention.n_heads_in_group` (query heads per
  KV head); the query heads are one global `num_attention_heads`, so per-layer query heads and
  block widths are refused in one line naming the axis.
- openelm: OpenELM `config.json`, per-layer `ffn_multipliers`; the reader builds
  `make_divisible(ffn_multipliers[i] * model_dim, ffn_dim_divisor)`. A two-entry list is read as
  linspace end points rounded to 2 decimals, which matters for 2-layer models.

transformers has no built-in class for `openelm` or `nemotron-nas`: their configuration and
modelling code lives in the reference checkpoints' Hub repositories. The written config.json
therefore carries an `auto_map` naming that code as `<repo>--<module>.<class>` (the form
transformers resolves against another repository), so `AutoConfig.from_pretrained(dir,
trust_remote_code=True)` finds it. That code is not installable here (no network), so what
was and was not checked is stated per format (`Format.checked`) and printed by the CLI with
the exact loading snippet (`Format.loading`).
- megatron: Megatron Core heterogeneous-layers JSON (`--heterogeneous-layers-config-path`) with a
  direct `ffn_hidden_size` per block: exact; per-layer key/value heads as each block's
  `attention.num_query_groups` (query heads are global, as in DeciLM).
- openelm, gemma3n and widths carry no per-layer attention or block width: such a model is
  refused in one line naming the axis (export it as native, which carries every axis).
- gemma3n: transformers `Gemma3nTextConfig` with a per-layer `intermediate_size` list: exact
  (widths only: Gemma 3n's other components are not ours).
- widths: a plain JSON list of per-layer widths.

Pure Python: no torch, no transformers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any, NamedTuple

from tlmsearch.configs.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.configs.run import RunConfig
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


def _json(doc: Any) -> str:
    return json.dumps(doc, indent=2) + "\n"


def _yaml(doc: Any) -> str:
    import yaml

    return str(yaml.safe_dump(doc, sort_keys=False))


class Format(NamedTuple):
    """One export format: how to write it and how its reader reads the widths back."""

    name: str
    filename: str
    description: str
    exact_rule: str  # when the reader builds exactly the requested widths
    write: Callable[[ExportInput], tuple[Any, list[str]]]  # -> (document, notes)
    decode: Callable[[Any], tuple[int, ...]]  # document -> the widths the reader builds
    dump: Callable[[Any], str] = _json  # document -> file text
    # how to load the file: a snippet with {path} and {dir} to fill in, or a function of the document giving one
    loading: str | Callable[[Any], str] = ""
    checked: str = ""  # what the tests check of that loading, and what they cannot
    # what `ExportInput.divisor` (--divisor) means to this format; "" = the format takes no divisor
    divisor: str = ""
    # the other files the format's folder holds beside `filename`: name -> text (the hf modeling file)
    files: Callable[[], dict[str, str]] | None = None


# ----------------------------------------------------------------------------- writers

Writer = Callable[[ExportInput], tuple[Any, list[str]]]


def _mlp_widths_only(name: str, write: Writer, *, kv_heads: str = "") -> Writer:
    """`write`, refusing in one line, naming the axis, a model with per-layer block widths
    (`block_widths`) or attention heads (`attn_heads`, `kv_heads`) that format `name` does not
    carry: its readers would build d_model and n_heads in every layer. `kv_heads` names the
    format's per-layer key/value-head field where it has one (DeciLM's and Megatron's block
    configs): then per-layer KV heads under uniform query heads are written, not refused."""

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
        return write(x)

    return checked


def kv_heads_of(model: ModelConfig) -> list[int]:
    """Key/value heads of every layer (`ModelConfig.key_value_heads`: n_heads unless per-layer)."""
    return [model.key_value_heads(layer) for layer in range(model.n_layers)]


def _native(x: ExportInput) -> tuple[dict[str, Any], list[str]]:
    run = RunConfig(
        model=x.model,
        train=TrainConfig.from_dict(dict(x.train), where="train"),
        data=DataConfig.from_dict(dict(x.data), where="data"),
        meta=dict(x.source),
    )
    return run.to_dict(), []


NEMOTRON_CODE = "nvidia/Llama-3_1-Nemotron-51B-Instruct"  # Hub repository of DeciLM's config/model code
OPENELM_CODE = "apple/OpenELM-270M"  # Hub repository of OpenELM's config/model code
OPENELM_READERS = (
    "OpenELM's readers are Apple's code on the Hub (needs network) and mlx-lm (needs MLX, built for Apple silicon; "
    "it does not run on Linux CPU machines); the file carries every field mlx-lm 0.32.2 requires"
)


def _auto_map(repo: str, config: str, model: str) -> dict[str, str]:
    return {"AutoConfig": f"{repo}--{config}", "AutoModelForCausalLM": f"{repo}--{model}"}


def _nemotron(x: ExportInput) -> tuple[dict[str, Any], list[str]]:
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


def _openelm(x: ExportInput) -> tuple[dict[str, Any], list[str]]:
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


def _megatron(x: ExportInput) -> tuple[dict[str, Any], list[str]]:
    # lazy: a format's own module loads when it writes, not for the --format choices (help path)
    from tlmsearch.export.megatron import megatron_doc, one_kv_group

    doc = megatron_doc(x.model, x.widths, kv_heads_of(x.model), dict(x.source), dict(x.train))
    notes = ["RoPE scaling factor 1.0 (Megatron-LM's validation asks for Llama-3 scaling; factor 1 changes nothing)"]
    if not one_kv_group(doc):
        notes.append(
            "per-layer key/value heads: Megatron Core builds them, Megatron-LM's pretrain_gpt.py refuses them "
            "(one n_heads_in_group in all layers): build with the Megatron Core calls below"
        )
    return doc, notes


GEMMA3N_DIFFERS = (
    "transformers builds Gemma 3n, not the trained model: the MLP widths, heads and RoPE theta ({theta:g}) carry "
    "over, but it adds AltUp (4 streams), LAuReL (rank 64), per-layer input embeddings and final-logit softcapping "
    "(30), so it has more parameters and computes otherwise (for the trained model: --format hf)"
)


def _gemma3n(x: ExportInput) -> tuple[dict[str, Any], list[str]]:
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


def _hf(x: ExportInput) -> tuple[dict[str, Any], list[str]]:
    # lazy: a format's own module loads when it writes, not for the --format choices (help path)
    from tlmsearch.export.hf import MODELING_FILE, hf_config

    doc = hf_config(x.model, x.widths, dict(x.source))
    return doc, [
        f"a Llama-style {'Gated Attention ' if doc['attention_gate'] != 'none' else ''}model with per-layer shapes "
        f"({MODELING_FILE}, tlmsearch's own code); untrained unless exported with --weights"
    ]


def _widths(x: ExportInput) -> tuple[list[int], list[str]]:
    return list(x.widths), []


def _hf_files() -> dict[str, str]:
    # lazy: a format's own module loads when it writes, not for the --format choices (help path)
    from tlmsearch.export.hf import MODELING_FILE, modeling_source

    return {MODELING_FILE: modeling_source()}


def _megatron_loading(doc: dict[str, Any]) -> str:
    # lazy: a format's own module loads when it writes, not for the --format choices (help path)
    from tlmsearch.export.megatron import megatron_loading

    return megatron_loading(doc)


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


def _decode_hf(doc: Any) -> tuple[int, ...]:
    # lazy: a format's own module loads when it writes, not for the --format choices (help path)
    from tlmsearch.export.hf import decode_hf

    return decode_hf(doc)


def _decode_nemotron(doc: Any) -> tuple[int, ...]:
    h = doc["hidden_size"]
    return tuple(_find_multiple(int(2 * b["ffn"]["ffn_mult"] * h / 3), 256) for b in doc["block_configs"])


def _decode_openelm(doc: Any) -> tuple[int, ...]:
    mults: Sequence[float] = doc["ffn_multipliers"]
    n = doc["num_transformer_layers"]
    if isinstance(mults, int | float):
        mults = [float(mults)] * n
    elif len(mults) == 2:  # OpenELM: two numbers are linspace end points, rounded to 2 decimals
        mults = [round(mults[0] + (mults[1] - mults[0]) * i / max(n - 1, 1), 2) for i in range(n)]
    return tuple(make_divisible(m * doc["model_dim"], doc["ffn_dim_divisor"]) for m in mults)


def _decode_gemma3n(doc: Any) -> tuple[int, ...]:
    size = doc["intermediate_size"]
    return tuple(int(w) for w in size) if isinstance(size, list) else (int(size),) * doc["num_hidden_layers"]


# ----------------------------------------------------------------------------- the table

_REMOTE_LOADING = """\
from transformers import AutoConfig, AutoModelForCausalLM
config = AutoConfig.from_pretrained({{dir!r}}, trust_remote_code=True)  # code from {repo}
model = AutoModelForCausalLM.from_config(config, trust_remote_code=True)  # untrained, the exported widths"""
_REMOTE_CHECKED = (
    "tested: transformers reads the file's auto_map and asks {repo} for {cls} (not the 'model type not "
    "recognized' error); not tested: that class itself (remote code, needs the Hub), so its own checks "
    "of the other fields are unverified here"
)

FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format(
            "native",
            "config.yaml",
            "tlmsearch run config (model + train + data + meta), for `tlmsearch train --config`",
            "exact",
            _native,
            lambda doc: tuple(int(w) for w in doc["model"]["mlp_widths"]),
            _yaml,
            loading="tlmsearch train --config {path}",
            checked="tested: the file is a valid --config that trains the exported widths",
        ),
        Format(
            "hf",
            "config.json",
            "Hugging Face folder: config.json with per-layer shapes and tlmsearch's own modeling file "
            "(trust_remote_code); trained weights as safetensors with --weights",
            "exact",
            _hf,
            _decode_hf,
            loading="""\
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained({dir!r}, trust_remote_code=True)""",
            checked=(
                "tested: transformers loads the folder (trust_remote_code), its logits equal tlmsearch's model's with "
                "the same weights (float32, max abs difference 0.0) and transformers.Trainer trains it a step"
            ),
            files=_hf_files,
        ),
        Format(
            "nemotron-nas",
            "config.json",
            "DeciLM / Nemotron-NAS config.json with per-layer block_configs (ffn_mult)",
            "exact for widths that are multiples of 256 (readers round up to one)",
            _mlp_widths_only("nemotron-nas", _nemotron, kv_heads="block_configs[i].attention.n_heads_in_group"),
            _decode_nemotron,
            loading=_REMOTE_LOADING.format(repo=NEMOTRON_CODE),
            checked=_REMOTE_CHECKED.format(repo=NEMOTRON_CODE, cls="DeciLMConfig"),
        ),
        Format(
            "openelm",
            "config.json",
            "OpenELM config.json with per-layer ffn_multipliers",
            "exact with ffn_dim_divisor = gcd of the widths (the default)",
            _mlp_widths_only("openelm", _openelm),
            _decode_openelm,
            loading=_REMOTE_LOADING.format(repo=OPENELM_CODE)
            + "\n# or with mlx-lm on Apple silicon: mlx_lm.load({dir!r}) after adding weights and a tokenizer",
            checked=_REMOTE_CHECKED.format(repo=OPENELM_CODE, cls="OpenELMConfig")
            + "; tested: every field mlx-lm 0.32.2's OpenELM ModelArgs requires is there, and the widths and heads its "
            "rules build equal the trained model's (mlx-lm itself needs Apple silicon: not run here)",
            divisor="its ffn_dim_divisor",
        ),
        Format(
            "megatron",
            "heterogeneous_layers_config.json",
            "Megatron Core heterogeneous-layers JSON with per-block ffn_hidden_size",
            "exact",
            _mlp_widths_only("megatron", _megatron, kv_heads="block_configs[i].attention.num_query_groups"),
            lambda doc: tuple(int(b["ffn"]["ffn_hidden_size"]) for b in doc["block_configs"]),
            loading=_megatron_loading,
            checked=(
                "tested: Megatron Core (megatron-core, the megatron extra) builds the model from the file with every "
                "layer's MLP width and KV groups, and the command passes Megatron-LM's argument validation as pinned "
                "from its source (megatron/training/arguments.py, which the PyPI package does not ship)"
            ),
        ),
        Format(
            "gemma3n",
            "config.json",
            "transformers Gemma3nTextConfig config.json with a per-layer intermediate_size list",
            "exact",
            _mlp_widths_only("gemma3n", _gemma3n),
            _decode_gemma3n,
            loading="transformers.Gemma3nTextConfig.from_json_file({path!r})",
            checked="tested: transformers' Gemma3nTextConfig reads the file and keeps every width",
        ),
        Format(
            "widths",
            "widths.json",
            "a plain JSON list of per-layer MLP widths",
            "exact",
            _mlp_widths_only("widths", _widths),
            lambda doc: tuple(int(w) for w in doc),
            loading="json.load(open({path!r}))",
            checked="plain JSON",
        ),
    )
}


def get_format(name: str) -> Format:
    """The format `name`; a `UserError` naming the allowed ones otherwise."""
    fmt = FORMATS.get(name)
    if fmt is None:
        raise UserError(f"unsupported export format {name!r}; choose one of: {', '.join(FORMATS)}")
    return fmt


def decode(fmt: str, doc: Any) -> tuple[int, ...]:
    """The per-layer widths a reader of format `fmt` builds from document `doc`."""
    return get_format(fmt).decode(doc)
