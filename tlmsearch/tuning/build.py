"""From a search config and a sampled profile to the concrete budget, widths and model."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from tlmsearch.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.config import ModelConfig
    from tlmsearch.presets import Preset
    from tlmsearch.profiles import Budget, ProfileSpec
    from tlmsearch.tuning.config import SearchConfig


def search_preset(cfg: SearchConfig) -> Preset:
    """The preset with the shape overrides of `cfg.model` applied (and the tokenizer's vocab)."""
    from tlmsearch.presets import Preset, preset

    base = preset(cfg.preset)
    shape_fields = {f.name for f in dataclasses.fields(Preset)} - {"name"}
    shape = {k: v for k, v in cfg.model.items() if k in shape_fields}
    if cfg.data.tokenizer == "bpe" and "vocab_size" not in shape:
        shape["vocab_size"] = cfg.data.bpe_vocab
    return base.replace(**shape) if shape else base


def model_overrides(cfg: SearchConfig) -> dict[str, Any]:
    """The `cfg.model` entries that are ModelConfig fields rather than preset shape fields."""
    from tlmsearch.presets import Preset

    shape_fields = {f.name for f in dataclasses.fields(Preset)}
    return {k: v for k, v in cfg.model.items() if k not in shape_fields}


def sweep_widths(cfg: SearchConfig) -> tuple[int, int, int]:
    """(low, high, step) of the base widths a budget sweep samples, snapped to `multiple_of`."""
    m = search_preset(cfg).multiple_of
    low, high = cfg.base_widths
    lo, hi = -(-low // m) * m, (high // m) * m
    if lo >= hi:
        raise ConfigError(
            f"base_widths={list(cfg.base_widths)} holds fewer than two multiples of {m} (the preset's multiple_of)"
        )
    return lo, hi, m


def default_base_width(cfg: SearchConfig) -> int:
    """The base width of a fixed budget, or the middle of a sweep (where baselines run)."""
    if cfg.base_widths:
        lo, hi, m = sweep_widths(cfg)
        return lo + ((hi - lo) // (2 * m)) * m
    return cfg.base_width or search_preset(cfg).base_width


def budget_for(cfg: SearchConfig, base_width: int | None = None) -> Budget:
    return search_preset(cfg).budget(base_width=base_width or default_base_width(cfg))


def trial_shape(
    cfg: SearchConfig, spec: ProfileSpec, base_width: int | None = None
) -> tuple[Budget, tuple[int, ...], ModelConfig]:
    """The budget, the exact-sum widths and the model one trial trains."""
    budget = budget_for(cfg, base_width)
    widths = spec.widths(budget)
    model = search_preset(cfg).model_config(cfg.arch, widths, **model_overrides(cfg))
    return budget, widths, model
