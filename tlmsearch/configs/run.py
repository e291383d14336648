"""`RunConfig`: one training run as a file (`tlmsearch train --config`, native exports).

A run config has four sections, each optional:

    model:   a full ModelConfig (it has `mlp_widths`) ... or a ModelSpec: preset + arch + width
             profile, e.g. {preset: cpu-s, arch: titans, family: "cosine:start=1.5,end=0.5"}
             plus preset shape / ModelConfig overrides (seq_len: 128, n_layers: 4, ...)
    train:   TrainConfig fields
    data:    DataConfig fields
    meta:    free-form notes (where the run came from); never read by training

`runs/<name>/config.yaml` (written by `tlmsearch train`) and the native export are RunConfigs
with a full ModelConfig, so either reproduces its model exactly. Unknown sections and fields
are refused with their names. Torch-free.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from tlmsearch.configs.presets import Preset, check_override_values
from tlmsearch.configs.resolve import resolve_model
from tlmsearch.core.base import (
    ARCHITECTURE_NAMES,
    Config,
    DataConfig,
    ModelConfig,
    TrainConfig,
    check_choice,
    check_field_types,
)
from tlmsearch.core.validate import load_yaml, read_text
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec

SECTIONS: tuple[str, ...] = ("model", "train", "data", "meta")
_SPEC_FIELDS: tuple[str, ...] = ("preset", "arch", "family", "base_width")


def _override_fields() -> tuple[set[str], set[str]]:
    """(preset shape fields, ModelConfig fields) a ModelSpec may override."""
    shape = {f.name for f in dataclasses.fields(Preset)} - {"name", "base_width"}
    model = {f.name for f in dataclasses.fields(ModelConfig)} - {"arch", "mlp_widths"}
    return shape, model


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelSpec(Config):
    """A model named by a preset, an architecture and a width profile, resolved on use.

    `overrides` holds preset shape fields (n_layers, d_model, ..., applied to the preset before
    the budget is taken, so the profile stays on budget) and ModelConfig fields (init_std,
    options, ...). In a file they sit flat beside `preset`/`arch`/`family`/`base_width`.
    """

    preset: str = "cpu-s"
    arch: str = "transformer"
    family: str = "uniform"  # a profile text: family[:param=value,...]
    base_width: int = 0  # MLP width per layer of the budget; 0 = the preset's
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_field_types(self, "model.")  # preset=None or base_width="x": one line, not a TypeError later
        check_choice("model.arch", self.arch, ARCHITECTURE_NAMES)
        ProfileSpec.parse(self.family)  # ConfigError names a bad profile
        if self.base_width < 0:
            raise ConfigError(f"model.base_width={self.base_width} must be >= 0 (0 = the preset's)")
        shape, model = _override_fields()
        unknown = sorted(k if isinstance(k, str) else repr(k) for k in set(self.overrides) - shape - model)
        if unknown:
            allowed = ", ".join(_SPEC_FIELDS + tuple(sorted(shape | model)))
            raise ConfigError(f"model: unknown field(s) {', '.join(unknown)}; allowed: {allowed}")
        # the overrides' values are checked now (options: 5, tie_embeddings: maybe), not when the model is built
        object.__setattr__(self, "overrides", check_override_values(self.overrides, "model", self.arch))

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in _SPEC_FIELDS}
        out.update(super().to_dict()["overrides"])
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "") -> Self:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where or 'model'}: expected a mapping, got {type(data).__name__}")
        spec = {k: v for k, v in data.items() if k in _SPEC_FIELDS}
        if spec.get("base_width") is None:
            spec.pop("base_width", None)  # null = the preset's
        overrides = {k: v for k, v in data.items() if k not in _SPEC_FIELDS}
        return super().from_dict({**spec, "overrides": overrides}, where=where)

    def replace(self, **changes: Any) -> Self:
        """A copy with spec fields and/or override fields changed (overrides merge)."""
        spec = {k: v for k, v in changes.items() if k in _SPEC_FIELDS and v is not None}
        extra = {k: v for k, v in changes.items() if k not in _SPEC_FIELDS}
        return dataclasses.replace(self, **spec, overrides={**self.overrides, **extra})

    def resolve(self) -> tuple[ModelConfig, dict[str, Any]]:
        """(the ModelConfig, meta naming preset/arch/family/base_width); widths exactly on budget.

        The same resolver a search trial uses (`tlmsearch.configs.resolve.resolve_model`).
        """
        family = ProfileSpec.parse(self.family)
        budget, _, cfg = resolve_model(self.preset, self.arch, self.overrides, family, self.base_width or None)
        meta = {"preset": self.preset, "arch": self.arch, "family": str(family), "base_width": budget.base_width}
        return cfg, meta


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunConfig(Config):
    """One training run: the model (full or by spec), its training, its data and notes."""

    model: ModelConfig | ModelSpec = dataclasses.field(default_factory=ModelSpec)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_field_types(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "") -> Self:
        """Sections as in the module docstring; a `model` with `mlp_widths` is a full ModelConfig."""
        where = where or "run config"
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping with sections {', '.join(SECTIONS)}")
        unknown = sorted(k if isinstance(k, str) else repr(k) for k in set(data) - set(SECTIONS))
        if unknown:
            raise ConfigError(f"{where}: unknown section(s) {', '.join(unknown)}; allowed: {', '.join(SECTIONS)}")
        for key, value in data.items():
            if value is not None and not isinstance(value, Mapping):
                raise ConfigError(f"{where}: section {key!r} must be a mapping")
        doc = {k: dict(v) for k, v in data.items() if v is not None}
        model_doc = doc.pop("model", {})
        model: ModelConfig | ModelSpec = (
            ModelConfig.from_dict(model_doc, where="model")
            if "mlp_widths" in model_doc
            else ModelSpec.from_dict(model_doc, where="model")
        )
        return dataclasses.replace(super().from_dict(doc, where=where), model=model)

    @classmethod
    def load(cls, path: str | Path) -> Self:
        """Read a YAML (or `.json`) file; errors name the file and stay on one line."""
        path = Path(path)
        text = read_text(path, "config file")  # one line for a directory, binary or non-UTF-8 file
        if path.suffix == ".json":
            try:
                doc = json.loads(text)
            except ValueError as exc:
                raise ConfigError(f"{path}: not valid JSON ({str(exc).splitlines()[0]})") from None
        else:
            doc = load_yaml(text, str(path))
        if doc is None:  # else an empty file would silently mean every default
            raise ConfigError(f"{path}: holds no settings (an empty or null YAML document)")
        return cls.from_dict(doc, where=str(path))

    def resolved(self) -> tuple[ModelConfig, dict[str, Any]]:
        """(the ModelConfig, meta with the spec's preset/arch/family/base_width merged in)."""
        if isinstance(self.model, ModelSpec):
            cfg, spec_meta = self.model.resolve()
            return cfg, {**self.meta, **spec_meta}
        return self.model, dict(self.meta)
