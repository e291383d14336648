"""The one resolver from a search config and a profile to the budget, widths and model of a trial.

    budget, widths, model = trial_shape(cfg, ProfileSpec.parse("cosine"), base_width=None)

The driver resolves each trial once through it (`tlmsearch.configs.trial.trial_spec`, which
then sets the tokenizer's vocabulary and carries the exact `ModelConfig` to the worker and into
the record); the driver also validates baselines with it before Ray starts. Pure: presets and
profiles only, no torch.

A joint profile (`joint:attention,...`, `joint:block,...`; `tlmsearch.profiles.joint`) moves the
query heads or the block widths too: the resolver builds the budget's uniform model and hands it,
with the profile's MLP shape and head / block targets, to the joint solve
(`tlmsearch.models.joint_budget.resolve_joint`), which snaps the targets to whole heads and
solves the MLP widths so that the model holds exactly the uniform model's non-embedding
parameters (or, with `hold=flops` in the profile, its training FLOPs per token). That solve
needs the exact counts of models/, a layer above this one, so the resolver reaches it by its
import path at run time, as `architectures.architecture` reaches an
architecture family's spec (`_JOINT_SOLVE`). `joint:mlp,...` (and every other family) resolves
exactly as before: the profile's widths on the budget.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from tlmsearch.configs.architectures import ARCHITECTURES, architecture
from tlmsearch.configs.base import DataConfig, ModelConfig
from tlmsearch.configs.presets import Preset, model_fields, shaped_preset
from tlmsearch.configs.search import SearchConfig
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import Budget, ProfileSpec, joint

# "module:function" of the joint solve (see the module docstring)
_JOINT_SOLVE = "tlmsearch.models.joint_budget:resolve_joint"


def resolve_model(
    preset_name: str,
    arch: str,
    overrides: Mapping[str, Any],
    spec: ProfileSpec,
    base_width: int | None = None,
    data: DataConfig | None = None,
) -> tuple[Budget, tuple[int, ...], ModelConfig]:
    """THE resolver: preset + overrides + profile (+ base width) -> budget, exact-sum widths, model.

    `base_width` None is the (shaped) preset's. Every path that builds a model from a profile
    (a search trial, `tlmsearch train --family`, an old record's export) goes through here.
    """
    p = shaped_preset(preset_name, overrides, data)
    budget = p.budget(base_width=base_width or p.base_width)
    if spec.family == joint.FAMILY:
        params = spec.resolved().params
        if joint.moves_more_than_mlp(params):
            model = _joint_model(p, arch, budget, spec, overrides)
            return budget, model.mlp_widths, model
    widths = spec.widths(budget)
    return budget, widths, _model(p, arch, widths, overrides)


def _joint_model(p: Preset, arch: str, budget: Budget, spec: ProfileSpec, overrides: Mapping[str, Any]) -> ModelConfig:
    """The model of a joint profile that moves heads or block widths: the uniform model of
    `budget`, then the joint solve (one-line ConfigError when the budget cannot balance it)."""
    params = spec.resolved().params
    blocks = params["mode"] == "block"
    if blocks and not architecture(arch).block_widths:
        allowed = ", ".join(name for name in ARCHITECTURES if architecture(name).block_widths)
        raise ConfigError(
            f"profile {spec} moves the block width, which arch={arch!r} does not build (families with "
            f"block widths: {allowed}); use joint:mlp or joint:attention, or one of those families"
        )
    uniform = _model(p, arch, budget.uniform(), overrides)
    n, h = budget.n_layers, uniform.n_heads
    solve = _joint_solve()
    try:
        return solve(
            uniform,
            budget,
            joint.mlp_shape(n, params),
            joint.head_targets(n, params, h),
            joint.block_targets(n, params, h) if blocks else None,
            hold=str(params["hold"]),
        )
    except ConfigError as exc:
        raise ConfigError(f"profile {spec} on {n} layers of base width {budget.base_width}: {exc}") from None


def _joint_solve() -> Callable[..., ModelConfig]:
    module, _, name = _JOINT_SOLVE.partition(":")
    solve: Callable[..., ModelConfig] = getattr(importlib.import_module(module), name)
    return solve


def _model(p: Preset, arch: str, widths: tuple[int, ...], overrides: Mapping[str, Any]) -> ModelConfig:
    return p.model_config(arch, widths, **model_fields(overrides))


def search_preset(cfg: SearchConfig) -> Preset:
    """The preset with the shape overrides of `cfg.model` applied (and the tokenizer's vocab)."""
    return shaped_preset(cfg.preset, cfg.model, cfg.data)


def sweep_widths(cfg: SearchConfig) -> tuple[int, int, int]:
    """(low, high, step) of the base widths a budget sweep samples: at most `budget_levels`
    widths evenly spaced from low, on multiples of `multiple_of` (the last one may fall short
    of high when the spacing has to round up)."""
    m = search_preset(cfg).multiple_of
    low, high = cfg.base_widths
    lo, hi = -(-low // m) * m, (high // m) * m
    if lo >= hi:
        raise ConfigError(
            f"base_widths={list(cfg.base_widths)} holds fewer than two multiples of {m} (the preset's multiple_of)"
        )
    gaps = cfg.budget_levels - 1
    step = max(m, -(-(hi - lo) // (gaps * m)) * m)  # rounded up: never more than budget_levels widths
    return lo, lo + (hi - lo) // step * step, step


def sweep_levels(cfg: SearchConfig) -> tuple[int, ...]:
    """Every base width of a budget sweep (empty for a fixed budget)."""
    if not cfg.base_widths:
        return ()
    lo, hi, step = sweep_widths(cfg)
    return tuple(range(lo, hi + 1, step))


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
    """The budget, the exact-sum widths and the model one trial of search `cfg` trains (before
    the tokenizer sets `vocab_size`: `configs.trial.trial_spec` does that)."""
    return resolve_model(cfg.preset, cfg.arch, cfg.model, spec, base_width or default_base_width(cfg), cfg.data)
