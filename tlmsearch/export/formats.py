"""The export formats: ONE table, `FORMATS`, name -> `Format` (like `profiles.FAMILIES`).

A format is a writer (model + widths -> the document a reader reads, plus notes), the reader's
documented rule for the widths it builds from that document (`decode`), when that rule is
exact, and how the document is serialized. `tlmsearch.export.schedule` writes and checks every format
through this table and the CLI's `--format` choices and help read it, so a new format is one
`Format(...)` row here (docs/cli.md prints the table from it).

Readers' rules (those of other families' configs, nemotron-nas, openelm and gemma3n, with their
writers: `export.foreign`; what a writer gets and the refusal of axes a format does not carry:
`export.writer`):
- native: tlmsearch's own `RunConfig` (model + train + data + meta); `tlmsearch train --config`.
- hf: a Hugging Face folder with tlmsearch's own modeling file (`export.hf`): exact.
- megatron: Megatron Core heterogeneous-layers JSON (`--heterogeneous-layers-config-path`) with a
  direct `ffn_hidden_size` per block: exact; per-layer key/value heads as each block's
  `attention.num_query_groups` (query heads are global, as in DeciLM).
- widths: a plain JSON list of per-layer widths.
- nemotron-nas, megatron, openelm, gemma3n and widths carry neither per-layer block widths nor
  per-layer query heads, and only nemotron-nas and megatron carry per-layer key/value heads
  (`writer.mlp_widths_only`): a model with an axis its format lacks is refused in one line
  naming the axis (export it as native, which carries every axis).

The Hub code that reads openelm and nemotron-nas is not installable here (no network), so what
was and was not checked is stated per format (`Format.checked`) and printed by the CLI with
the exact loading snippet (`Format.loading`).

Pure Python: no torch, no transformers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

from tlmsearch.configs.run import RunConfig
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.errors import UserError
from tlmsearch.export.foreign import (
    NEMOTRON_CODE,
    OPENELM_CODE,
    decode_gemma3n,
    decode_nemotron,
    decode_openelm,
    write_gemma3n,
    write_nemotron,
    write_openelm,
)
from tlmsearch.export.writer import ExportInput, Writer, kv_heads_of, mlp_widths_only


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
    write: Writer  # -> (document, notes)
    decode: Callable[[Any], tuple[int, ...]]  # document -> the widths the reader builds
    dump: Callable[[Any], str] = _json  # document -> file text
    # how to load the file: a snippet with {path} and {dir} to fill in, or a function of the document giving one
    loading: str | Callable[[Any], str] = ""
    checked: str = ""  # what the tests check of that loading, and what they cannot
    # what `ExportInput.divisor` (--divisor) means to this format; "" = the format takes no divisor
    divisor: str = ""
    # the other files the format's folder holds beside `filename`: name -> text (the hf modeling file)
    files: Callable[[], dict[str, str]] | None = None


# ------------------------------------------------------------------ writers (other families': export.foreign)


def _native(x: ExportInput) -> tuple[dict[str, Any], list[str]]:
    run = RunConfig(
        model=x.model,
        train=TrainConfig.from_dict(dict(x.train), where="train"),
        data=DataConfig.from_dict(dict(x.data), where="data"),
        meta=dict(x.source),
    )
    return run.to_dict(), []


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


def _decode_hf(doc: Any) -> tuple[int, ...]:
    # lazy: a format's own module loads when it writes, not for the --format choices (help path)
    from tlmsearch.export.hf import decode_hf

    return decode_hf(doc)


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
            mlp_widths_only("nemotron-nas", write_nemotron, kv_heads="block_configs[i].attention.n_heads_in_group"),
            decode_nemotron,
            loading=_REMOTE_LOADING.format(repo=NEMOTRON_CODE),
            checked=_REMOTE_CHECKED.format(repo=NEMOTRON_CODE, cls="DeciLMConfig"),
        ),
        Format(
            "openelm",
            "config.json",
            "OpenELM config.json with per-layer ffn_multipliers",
            "exact with ffn_dim_divisor = gcd of the widths (the default)",
            mlp_widths_only("openelm", write_openelm),
            decode_openelm,
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
            mlp_widths_only("megatron", _megatron, kv_heads="block_configs[i].attention.num_query_groups"),
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
            mlp_widths_only("gemma3n", write_gemma3n),
            decode_gemma3n,
            loading="transformers.Gemma3nTextConfig.from_json_file({path!r})",
            checked="tested: transformers' Gemma3nTextConfig reads the file and keeps every width",
        ),
        Format(
            "widths",
            "widths.json",
            "a plain JSON list of per-layer MLP widths",
            "exact",
            mlp_widths_only("widths", _widths, builds_model=False),
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
