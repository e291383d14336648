"""Export a per-layer MLP width schedule to training-config formats.

Each format is written as a reader will read it, then decoded back with that reader's
documented rule (`decode`); when the rule cannot reproduce a width exactly the result says so
and lists the widths the reader will build. Pure Python: no torch, no transformers.

Formats and their readers' rules:
- native: tlmsearch's own run config (model + train + data); `tlmsearch train --config` reads it.
- nemotron-nas: DeciLM / Nemotron-NAS `config.json`, `block_configs[i].ffn.ffn_mult`; the reader
  builds `roundup_to_256(int(2 * ffn_mult * hidden_size / 3))`, exact for multiples of 256.
- openelm: OpenELM `config.json`, per-layer `ffn_multipliers`; the reader builds
  `make_divisible(ffn_multipliers[i] * model_dim, ffn_dim_divisor)`. A two-entry list is read as
  linspace end points rounded to 2 decimals, which matters for 2-layer models.
- megatron: Megatron Core heterogeneous-layers JSON (`--heterogeneous-layers-config-path`) with a
  direct `ffn_hidden_size` per block: exact.
- gemma3n: transformers `Gemma3nTextConfig` with a per-layer `intermediate_size` list: exact
  (widths only: Gemma 3n's other components are not ours).
- widths: a plain JSON list of per-layer widths.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any

from tlmsearch.config import ModelConfig
from tlmsearch.errors import UserError

FORMATS: dict[str, str] = {
    "native": "tlmsearch run config (model + train + data), for `tlmsearch train --config`",
    "nemotron-nas": "DeciLM / Nemotron-NAS config.json with per-layer block_configs (ffn_mult)",
    "openelm": "OpenELM config.json with per-layer ffn_multipliers",
    "megatron": "Megatron Core heterogeneous-layers JSON with per-block ffn_hidden_size",
    "gemma3n": "transformers Gemma3nTextConfig config.json with a per-layer intermediate_size list",
    "widths": "a plain JSON list of per-layer MLP widths",
}

FILENAMES: dict[str, str] = {
    "native": "config.yaml",
    "nemotron-nas": "config.json",
    "openelm": "config.json",
    "megatron": "heterogeneous_layers_config.json",
    "gemma3n": "config.json",
    "widths": "widths.json",
}


@dataclass(frozen=True)
class Export:
    """One exported file plus what its reader will build from it."""

    format: str
    filename: str
    text: str
    widths: tuple[int, ...]  # the widths we asked for
    built: tuple[int, ...]  # the widths the reader builds under its documented rule
    notes: tuple[str, ...] = field(default=())

    @property
    def exact(self) -> bool:
        return self.built == self.widths

    def summary(self) -> str:
        """A short human report: where it is exact, and what a reader builds where it is not."""
        head = f"{self.format}: {self.filename}"
        if self.exact:
            lines = [f"{head} (exact: the reader builds widths {list(self.built)})"]
        else:
            diff = [i for i, (a, b) in enumerate(zip(self.widths, self.built, strict=True)) if a != b]
            lines = [
                f"{head} is NOT exact under the reader's rounding rule: layers {diff} change",
                f"  requested widths: {list(self.widths)} (sum {sum(self.widths)})",
                f"  reader builds:    {list(self.built)} (sum {sum(self.built)})",
            ]
        return "\n".join(lines + [f"  note: {n}" for n in self.notes])

    def write(self, out_dir: str | Path) -> Path:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        path = out / self.filename
        path.write_text(self.text)
        return path


def export(
    model: ModelConfig,
    fmt: str,
    *,
    train: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    source: Mapping[str, Any] | None = None,
    divisor: int | None = None,
) -> Export:
    """Export `model.mlp_widths` in format `fmt`.

    `train`/`data` (plain dicts of TrainConfig/DataConfig) go into the native config; `source`
    (e.g. run dir, trial id, profile text) is recorded where the format has room for it;
    `divisor` sets OpenELM's `ffn_dim_divisor` (default: the largest exact one, the gcd).
    """
    if fmt not in FORMATS:
        raise UserError(f"unsupported export format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    widths = tuple(int(w) for w in model.mlp_widths)
    doc, notes = _BUILDERS[fmt](model, widths, dict(train or {}), dict(data or {}), dict(source or {}), divisor)
    built = decode(fmt, doc)
    if fmt == "native":
        import yaml

        text = str(yaml.safe_dump(doc, sort_keys=False))
    else:
        text = json.dumps(doc, indent=2) + "\n"
    return Export(format=fmt, filename=FILENAMES[fmt], text=text, widths=widths, built=built, notes=tuple(notes))


# ----------------------------------------------------------------------------- builders


def _native(
    model: ModelConfig, widths: tuple[int, ...], train: dict, data: dict, source: dict, divisor: int | None
) -> tuple[dict[str, Any], list[str]]:
    doc: dict[str, Any] = {"model": model.to_dict()}
    if train:
        doc["train"] = train
    if data:
        doc["data"] = data
    return doc, []


def _nemotron(
    model: ModelConfig, widths: tuple[int, ...], train: dict, data: dict, source: dict, divisor: int | None
) -> tuple[dict[str, Any], list[str]]:
    h = model.d_model
    blocks = [
        {
            "attention": {"no_op": False, "replace_with_linear": False, "n_heads_in_group": 1},
            "ffn": {"no_op": False, "replace_with_linear": False, "ffn_mult": 1.5 * w / h},
        }
        for w in widths
    ]
    doc = {
        "architectures": ["DeciLMForCausalLM"],
        "model_type": "nemotron-nas",
        "hidden_size": h,
        "num_hidden_layers": model.n_layers,
        "num_attention_heads": model.n_heads,
        "vocab_size": model.vocab_size,
        "max_position_embeddings": model.seq_len,
        "rms_norm_eps": model.norm_eps,
        "rope_theta": model.rope_theta,
        "tie_word_embeddings": model.tie_embeddings,
        "hidden_act": "silu",
        "block_configs": blocks,
        "tlmsearch": {**source, "mlp_widths": list(widths)},
    }
    notes = []
    if any(w % 256 for w in widths):
        notes.append(
            "Nemotron-NAS readers round every FFN width up to a multiple of 256; exact only for "
            "profiles whose widths are multiples of 256 (use a budget with multiple_of=256)"
        )
    return doc, notes


def _openelm(
    model: ModelConfig, widths: tuple[int, ...], train: dict, data: dict, source: dict, divisor: int | None
) -> tuple[dict[str, Any], list[str]]:
    div = divisor or reduce(math.gcd, widths)
    doc = {
        "architectures": ["OpenELMForCausalLM"],
        "model_type": "openelm",
        "model_dim": model.d_model,
        "num_transformer_layers": model.n_layers,
        "head_dim": model.head_dim,
        "num_query_heads": None,
        "num_gqa_groups": 1,
        "qkv_multipliers": 1.0,
        "ffn_multipliers": [w / model.d_model for w in widths],
        "ffn_with_glu": True,
        "ffn_dim_divisor": div,
        "activation_fn_name": "swish",
        "normalization_layer_name": "rms_norm",
        "share_input_output_layers": model.tie_embeddings,
        "vocab_size": model.vocab_size,
        "max_context_length": model.seq_len,
        "rope_freq_constant": int(model.rope_theta),
        "tlmsearch": {**source, "mlp_widths": list(widths)},
    }
    notes = [f"ffn_dim_divisor={div}"]
    if model.n_layers == 2:
        notes.append("OpenELM reads a 2-entry ffn_multipliers list as linspace end points rounded to 2 decimals")
    return doc, notes


def _megatron(
    model: ModelConfig, widths: tuple[int, ...], train: dict, data: dict, source: dict, divisor: int | None
) -> tuple[dict[str, Any], list[str]]:
    blocks = [
        {
            "attention": {"no_op": False, "replace_with_linear": False, "num_query_groups": model.n_heads},
            "ffn": {"no_op": False, "replace_with_linear": False, "ffn_hidden_size": w},
        }
        for w in widths
    ]
    doc = {
        "hidden_size": model.d_model,
        "num_hidden_layers": model.n_layers,
        "num_attention_heads": model.n_heads,
        "vocab_size": model.vocab_size,
        "block_configs": blocks,
        "tlmsearch": {**source, "mlp_widths": list(widths)},
    }
    return doc, ["pass to Megatron with --heterogeneous-layers-config-path; --swiglu, no biases"]


def _gemma3n(
    model: ModelConfig, widths: tuple[int, ...], train: dict, data: dict, source: dict, divisor: int | None
) -> tuple[dict[str, Any], list[str]]:
    n = model.n_layers
    doc = {
        "model_type": "gemma3n_text",
        "hidden_size": model.d_model,
        "num_hidden_layers": n,
        "intermediate_size": list(widths),
        "num_attention_heads": model.n_heads,
        "num_key_value_heads": model.n_heads,
        "head_dim": model.head_dim,
        "vocab_size": model.vocab_size,
        "vocab_size_per_layer_input": model.vocab_size,
        "max_position_embeddings": model.seq_len,
        "rms_norm_eps": model.norm_eps,
        "tie_word_embeddings": model.tie_embeddings,
        "hidden_activation": "silu",
        "layer_types": ["full_attention"] * n,
        "num_kv_shared_layers": 0,
        "activation_sparsity_pattern": [0.0] * n,
    }
    return doc, ["per-layer widths carry over exactly; Gemma 3n's AltUp/LAuReL/per-layer inputs are not ours"]


def _widths(
    model: ModelConfig, widths: tuple[int, ...], train: dict, data: dict, source: dict, divisor: int | None
) -> tuple[list[int], list[str]]:  # type: ignore[override]
    return list(widths), []


_BUILDERS: dict[str, Any] = {
    "native": _native,
    "nemotron-nas": _nemotron,
    "openelm": _openelm,
    "megatron": _megatron,
    "gemma3n": _gemma3n,
    "widths": _widths,
}


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


def decode(fmt: str, doc: Any) -> tuple[int, ...]:
    """The per-layer widths a reader of format `fmt` builds from document `doc`."""
    if fmt == "native":
        return tuple(int(w) for w in doc["model"]["mlp_widths"])
    if fmt == "widths":
        return tuple(int(w) for w in doc)
    if fmt == "nemotron-nas":
        h = doc["hidden_size"]
        return tuple(_find_multiple(int(2 * b["ffn"]["ffn_mult"] * h / 3), 256) for b in doc["block_configs"])
    if fmt == "megatron":
        return tuple(int(b["ffn"]["ffn_hidden_size"]) for b in doc["block_configs"])
    if fmt == "gemma3n":
        size = doc["intermediate_size"]
        return tuple(int(w) for w in size) if isinstance(size, list) else (int(size),) * doc["num_hidden_layers"]
    if fmt == "openelm":
        mults: Sequence[float] = doc["ffn_multipliers"]
        n = doc["num_transformer_layers"]
        if isinstance(mults, int | float):
            mults = [float(mults)] * n
        elif len(mults) == 2:  # OpenELM: two numbers are linspace end points, rounded to 2 decimals
            mults = [round(mults[0] + (mults[1] - mults[0]) * i / max(n - 1, 1), 2) for i in range(n)]
        return tuple(make_divisible(m * doc["model_dim"], doc["ffn_dim_divisor"]) for m in mults)
    raise UserError(f"unsupported export format {fmt!r}; choose one of: {', '.join(FORMATS)}")


# ----------------------------------------------------------------------------- from a run


def pick_trial(study: Any, trial: str = "best") -> tuple[dict[str, Any], str]:
    """The record to export and why it was chosen.

    "best": the profile with the lowest mean verified perplexity when the run holds seed
    re-evaluations (verify/compare), else the finished search trial with the lowest val_loss.
    Otherwise `trial` is a trial id.
    """
    from tlmsearch.analysis.collect import as_dict, finished, metric
    from tlmsearch.analysis.summary import EVAL_KINDS, eval_kind
    from tlmsearch.analysis.verdict import ProfileResult

    records = [as_dict(r) for r in study.records]
    if trial != "best":
        rec = next((r for r in records if r["trial_id"] == trial), None)
        if rec is None:
            ids = [r["trial_id"] for r in records]
            shown = ", ".join(ids[:8]) + (", ..." if len(ids) > 8 else "")
            raise UserError(f"unknown trial id {trial!r} in {study.run_dir}; known: {shown or 'none'}")
        if not rec.get("widths"):
            raise UserError(f"trial {trial!r} has no widths to export (status {rec.get('status')})")
        return rec, f"trial {trial}"
    kind = eval_kind(records)
    if kind is not None:
        from tlmsearch.analysis.collect import profile_results

        results: list[ProfileResult] = profile_results(records, kinds=(kind,))
        if results:
            best = min(results, key=lambda r: r.mean_ppl)
            rec = next(r for r in records if r["trial_id"] == best.trial_ids[0])
            return rec, f"best mean perplexity over {best.n_seeds} {kind} seeds ({best.label})"
    done = finished(records, kinds=("baseline", "sampled") + EVAL_KINDS)
    if not done:
        raise UserError(f"{study.run_dir} has no finished trials (complete, full fidelity) to export")
    rec = min(done, key=lambda r: metric(r, "val_loss"))
    return rec, f"lowest search val_loss ({metric(rec, 'val_loss'):.4f}; not re-evaluated with seeds)"


def export_run(
    study: Any,
    trial: str = "best",
    fmt: str = "native",
    out_dir: str | Path | None = None,
    *,
    divisor: int | None = None,
    write: bool = True,
) -> tuple[Export, Path | None, str]:
    """Export one trial of a run (a `Study` or a run directory); returns (export, path, why chosen).

    Written to `out_dir` (default `<run_dir>/export/<trial_id>-<format>/`) unless `write=False`.
    """
    if fmt not in FORMATS:
        raise UserError(f"unsupported export format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    from tlmsearch.analysis.collect import label, metric
    from tlmsearch.tuning import load
    from tlmsearch.tuning.build import model_overrides, search_preset

    if isinstance(study, str | Path):
        if not Path(study).is_dir():
            raise UserError(f"run directory {str(study)!r} does not exist")
        study = load(study)
    rec, why = pick_trial(study, trial)
    cfg = study.config
    model = search_preset(cfg).model_config(cfg.arch, tuple(rec["widths"]), **model_overrides(cfg))
    steps = int(rec.get("max_steps") or cfg.train.steps)
    train = cfg.train.replace(
        seed=int(rec.get("seed", cfg.seed)), steps=steps, warmup_steps=min(cfg.train.warmup_steps, steps)
    )
    source = {
        "run_dir": str(study.run_dir),
        "trial_id": rec["trial_id"],
        "profile": label(rec),
        "val_loss": metric(rec, "val_loss"),
        "chosen": why,
    }
    ex = export(model, fmt, train=train.to_dict(), data=cfg.data.to_dict(), source=source, divisor=divisor)
    if fmt == "native":  # keep where it came from, in the section the trainer ignores
        import yaml

        doc = yaml.safe_load(ex.text)
        doc["meta"] = source
        ex = Export(ex.format, ex.filename, str(yaml.safe_dump(doc, sort_keys=False)), ex.widths, ex.built, ex.notes)
    path = None
    if write:
        out = Path(out_dir) if out_dir else Path(study.run_dir) / "export" / f"{rec['trial_id']}-{fmt}"
        path = ex.write(out)
    return ex, path, why
