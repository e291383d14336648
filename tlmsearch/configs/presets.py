"""Model shape presets: `preset("cpu-s").model_config("titans", mlp_widths)`.

No torch import. A preset fixes the shape (d_model, n_layers, n_heads, seq_len, vocab) and the
budget of MLP hidden units (`base_width` per layer, widths a multiple of `multiple_of`);
profiles spread `n_layers * base_width` units over the layers.

- `tiny`: for tests (d 32, 2 layers, 2 heads, seq 32, byte vocab).
- `cpu-s` (d 128, 8 layers, 4 heads, seq 256) and `cpu-m` (d 256, 12 layers, 4 heads, seq 256):
  byte vocab 256, widths a multiple of 32, so a cosine taper 1.5x -> 0.5x is representable.
- `170m`, `340m`, `760m`, `1.3b`: the Titans paper's shapes (170M = 12 blocks d 768; 340M =
  24 blocks d 1024 16 heads; 760M = 24 blocks d 1536; 1.3B = 18 blocks d 2048 8 heads).
  [OURS] seq 1024 (short search trials), vocab 32000 (Llama-2-sized tokenizer; override with
  `model_config(vocab_size=...)` to match the tokenizer actually used), 12 heads at 170M and
  760M, and `base_width` = 8/3 d rounded up to a multiple of 256 (`multiple_of` 256).
  The parameter totals named by the presets are nominal (the Titans/Transformer++ sizes).

A config's `model` mapping overrides a preset's shape fields and ModelConfig fields: the keys
and values are checked here (`check_override_values`, `check_search_model`) and a preset is
shaped by them (`shaped_preset`); `tlmsearch.configs.resolve` turns them into a trial's model.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

from tlmsearch.core.base import (
    MODEL_INT_BOUNDS,
    ArchOptions,
    Config,
    DataConfig,
    ModelConfig,
    check_positive,
    check_value,
    resolve_options,
)
from tlmsearch.core.validate import MAX_WIDTH, check_int
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import Budget


@dataclasses.dataclass(frozen=True, kw_only=True)
class Preset(Config):
    """A named model shape plus the MLP budget every profile of it shares."""

    name: str
    d_model: int
    n_layers: int
    n_heads: int
    seq_len: int
    base_width: int
    multiple_of: int = 1
    vocab_size: int = 256

    def __post_init__(self) -> None:
        for field in ("d_model", "n_layers", "n_heads", "seq_len", "base_width", "multiple_of", "vocab_size"):
            check_positive(field, getattr(self, field))
        # the bounds of ModelConfig (one definition), checked here because a shape is built into
        # tuples of n_layers widths before any ModelConfig exists (`plan --layers 1e9`: 8 GB)
        for field, high in {**MODEL_INT_BOUNDS, "base_width": MAX_WIDTH, "multiple_of": MAX_WIDTH}.items():
            check_int(field, getattr(self, field), 1, high)
        if self.base_width % self.multiple_of:
            raise ConfigError(f"base_width={self.base_width} must be a multiple of multiple_of={self.multiple_of}")
        if self.d_model % self.n_heads:
            raise ConfigError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")

    def budget(
        self, base_width: int | None = None, min_width: int | None = None, max_width: int | None = None
    ) -> Budget:
        """The budget of MLP hidden units: `n_layers * base_width`, widths multiples of `multiple_of`."""
        return Budget(
            n_layers=self.n_layers,
            base_width=self.base_width if base_width is None else base_width,
            multiple_of=self.multiple_of,
            min_width=min_width,
            max_width=max_width,
        )

    def uniform_widths(self) -> tuple[int, ...]:
        return (self.base_width,) * self.n_layers

    def model_config(self, arch: str, mlp_widths: tuple[int, ...] | None = None, **overrides: Any) -> ModelConfig:
        """A `ModelConfig` of this shape; `mlp_widths=None` means uniform `base_width`.

        `overrides` replace ModelConfig fields (e.g. `vocab_size`, `seq_len`); `options` may be
        the family's options object (`ArchSpec.options`) or a dict of its fields.
        """
        options = overrides.pop("options", None)
        fields: dict[str, Any] = {
            "arch": arch,
            "d_model": self.d_model,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "seq_len": self.seq_len,
            "vocab_size": self.vocab_size,
            "mlp_widths": self.uniform_widths() if mlp_widths is None else tuple(mlp_widths),
        }
        unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(ModelConfig)})
        if unknown:
            raise ConfigError(f"unknown ModelConfig field(s) {', '.join(unknown)}")
        fields.update(overrides)
        if options is not None:
            fields["options"] = options
        return ModelConfig(**fields)


def _gpu(name: str, d: int, layers: int, heads: int) -> Preset:
    base = -(-8 * d // (3 * 256)) * 256  # 8/3 d rounded up to a multiple of 256
    return Preset(
        name=name, d_model=d, n_layers=layers, n_heads=heads, seq_len=1024,
        base_width=base, multiple_of=256, vocab_size=32000,
    )  # fmt: skip


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(name="tiny", d_model=32, n_layers=2, n_heads=2, seq_len=32, base_width=64, multiple_of=8),
        Preset(name="cpu-xs", d_model=64, n_layers=6, n_heads=4, seq_len=128, base_width=192, multiple_of=16),
        Preset(name="cpu-s", d_model=128, n_layers=8, n_heads=4, seq_len=256, base_width=352, multiple_of=32),
        Preset(name="cpu-m", d_model=256, n_layers=12, n_heads=4, seq_len=256, base_width=704, multiple_of=32),
        _gpu("170m", 768, 12, 12),
        _gpu("340m", 1024, 24, 16),
        _gpu("760m", 1536, 24, 12),
        _gpu("1.3b", 2048, 18, 8),
    )
}


def preset(name: str) -> Preset:
    """The preset called `name`; a `ConfigError` naming the allowed names otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"preset={name!r} is unknown; choose one of: {', '.join(PRESETS)}") from None


# ----------------------------------------------------------------------------- model overrides
# A config's `model` mapping: shape fields of the preset and fields of ModelConfig, checked here
# (below the search config, which checks its own with them, and the resolver, which applies them).

_SHAPE_FIELDS = frozenset(f.name for f in dataclasses.fields(Preset)) - {"name"}
# ModelConfig fields an override may not set: the arch is a setting of its own, the widths come from the profile
_NOT_OVERRIDES = frozenset({"arch", "mlp_widths"})


def override_fields() -> frozenset[str]:
    """The keys a model override mapping may hold: preset shape fields and ModelConfig fields."""
    return _SHAPE_FIELDS | (frozenset(f.name for f in dataclasses.fields(ModelConfig)) - _NOT_OVERRIDES)


def check_override_values(overrides: Mapping[str, Any], where: str, arch: str | None) -> dict[str, Any]:
    """`overrides` with every value checked against its field's type (a ConfigError names the
    field as `<where>.<key>`), normalised as a file's value is; `options` is checked by the options
    class of `arch` (`resolve_options`: another family's option is refused) and stays as given.

    Only known keys are checked here; the callers refuse unknown ones with their own message.
    """
    hints = typing.get_type_hints(ModelConfig)
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        if key == "options":
            if arch is None:  # no architecture to read them (a ladder point): a mapping at least
                if not isinstance(value, Mapping | ArchOptions):
                    raise ConfigError(f"{where}.options: expected a mapping, got {type(value).__name__}")
            else:
                resolve_options(arch, value, f"{where}.options")
            out[key] = value
            continue
        hint = hints.get(key, int)  # shape fields that are no ModelConfig field (base_width, multiple_of) are ints
        out[key] = check_value(value, hint, f"{where}.{key}")
    return out


# keys a user may write into a search's `model` that are settings of the search itself
_SEARCH_SETTINGS: dict[str, str] = {
    "arch": "set the search's arch (--arch, or `arch:` in the search config)",
    "preset": "set the search's preset (--preset, or `preset:` in the search config)",
    "family": "a search draws its profiles from its space (--space); the baselines come first",
}


def check_search_model(overrides: Mapping[str, Any], arch: str | None) -> dict[str, Any]:
    """A search's `model` overrides, checked (keys and value types; `options` against the
    options of `arch`, the search's architecture) and normalised.

    The widths are what the search chooses, and the architecture is the search's `arch`, so
    neither may be set here.
    """
    if "mlp_widths" in overrides:
        raise ConfigError(
            "model.mlp_widths cannot be set in a search: the search chooses the widths (the profiles of its "
            "space at the budget base_width); to train given widths use `tlmsearch train --family SPEC` "
            "or `tlmsearch train --config FILE` with a full model (mlp_widths)"
        )
    for key, instead in _SEARCH_SETTINGS.items():
        if key in overrides:
            raise ConfigError(f"model.{key} is not a model override of a search; {instead}")
    unknown = sorted(k if isinstance(k, str) else repr(k) for k in set(overrides) - override_fields())
    if unknown:
        raise ConfigError(
            f"model: unknown ModelConfig field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(override_fields()))}"
        )
    return check_override_values(overrides, "model", arch)


def shaped_preset(preset_name: str, overrides: Mapping[str, Any], data: DataConfig | None = None) -> Preset:
    """Preset `preset_name` with the shape fields of `overrides` applied; with a BPE `data`
    config and no `vocab_size` override, the preset's vocabulary is the BPE vocabulary."""
    base = preset(preset_name)
    shape = {k: v for k, v in overrides.items() if k in _SHAPE_FIELDS}
    if data is not None and data.tokenizer == "bpe" and "vocab_size" not in shape:
        shape["vocab_size"] = data.bpe_vocab
    return base.replace(**shape) if shape else base


def model_fields(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of `overrides` that are ModelConfig fields rather than preset shape fields."""
    return {k: v for k, v in overrides.items() if k not in _SHAPE_FIELDS | {"name"}}
