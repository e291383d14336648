"""The one resolver from a search config and a profile to the budget, widths and model of a trial.

    budget, widths, model = trial_shape(cfg, ProfileSpec.parse("cosine"), base_width=None)

The driver resolves each trial once through it (`tlmsearch.configs.trial.trial_spec`, which
then sets the tokenizer's vocabulary and carries the exact `ModelConfig` to the worker and into
the record); the driver also validates baselines with it before Ray starts. Pure: presets and
profiles only, no torch.

A joint profile (`joint:attention,...`, `joint:block,...`; `tlmsearch.profiles.joint`) moves the
query heads or the block widths too: the resolver builds the budget's uniform model and hands it,
with the profile's MLP shape and head / block targets, to the joint solve
(`tlmsearch.profiles.joint_budget.resolve_joint`), which snaps the targets to whole heads and
solves the MLP widths so that the model holds exactly the uniform model's non-embedding
parameters (or, with `hold=flops` in the profile, its training FLOPs per token). The solve and
the exact counts it balances (`tlmsearch.models.counts`) are pure integer functions of a
`ModelConfig` on this layer, imported like any other module. `joint:mlp,...` (and every other
family) resolves exactly as before: the profile's widths on the budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tlmsearch.configs.lr_calibration import calibration_steps
from tlmsearch.configs.presets import Preset, model_fields, shaped_preset
from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.architectures import ARCHITECTURES, architecture
from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig, trial_length_text, with_tokens_per_param
from tlmsearch.errors import ConfigError
from tlmsearch.models.counts import count_params
from tlmsearch.profiles import Budget, ProfileSpec, joint
from tlmsearch.profiles.joint_budget import resolve_joint


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
    try:
        return resolve_joint(
            uniform,
            budget,
            joint.mlp_shape(n, params),
            joint.head_targets(n, params, h),
            joint.block_targets(n, params, h) if blocks else None,
            hold=str(params["hold"]),
        )
    except ConfigError as exc:
        raise ConfigError(f"profile {spec} on {n} layers of base width {budget.base_width}: {exc}") from None


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


def check_profiles_build(
    cfg: SearchConfig, specs: Sequence[ProfileSpec], *, what: str, base_width: int | None = None
) -> None:
    """Refuse, before anything trains, a profile the run's architecture and budget cannot build (a
    whole-block joint profile on Titans, a joint profile the budget cannot balance): one line
    naming `what` held it, rather than one failed run per seed."""
    for spec in specs:
        try:
            trial_shape(cfg, spec, base_width)
        except ConfigError as exc:
            raise ConfigError(f"{what}: {exc}") from None


def resolve_trial_length(cfg: SearchConfig) -> SearchConfig:
    """`cfg` with `train.steps` derived from `train.tokens_per_param` (when above 0): resolved once,
    on the driver, before any trial, from the non-embedding parameters of the search's budget
    (every profile of a budget has the same count). A budget sweep takes its middle budget (where
    its baselines run): the sweep's trials share one step count, so the other budgets train a
    little more or fewer tokens per parameter, and each record carries its own."""
    if not cfg.train.tokens_per_param:
        return cfg
    model = trial_shape(cfg, ProfileSpec.parse("uniform"))[2]
    train = with_tokens_per_param(cfg.train, count_params(model).non_embedding, model.seq_len)
    if cfg.grace_steps > train.steps:
        raise ConfigError(
            f"grace_steps={cfg.grace_steps} must not exceed the {train.steps:,} steps that "
            f"tokens_per_param={train.tokens_per_param:g} gives"
        )
    return cfg if train is cfg.train else cfg.replace(train=train)


def trial_length_line(cfg: SearchConfig, what: str = "") -> str | None:
    """'<what>: 20 tokens per parameter of 0.43M non-embedding parameters = 8.6M tokens = 4,199
    steps of 2,048 tokens' for a resolved `cfg` (None when its steps were given directly); a
    budget sweep adds the tokens per parameter of its smallest and largest budgets."""
    if not cfg.train.tokens_per_param:
        return None
    model = trial_shape(cfg, ProfileSpec.parse("uniform"))[2]
    tokens = cfg.train.tokens_per_step * model.seq_len
    text = trial_length_text(cfg.train.tokens_per_param, count_params(model).non_embedding, tokens, cfg.train.steps)
    if cfg.base_widths:
        low, high, _ = sweep_widths(cfg)
        spans = [
            cfg.train.steps * tokens / count_params(trial_shape(cfg, ProfileSpec.parse("uniform"), w)[2]).non_embedding
            for w in (low, high)
        ]
        text += f" at the middle budget; {spans[1]:.3g}-{spans[0]:.3g} tokens per parameter across the sweep"
    return f"{what or cfg.name or 'trial length'}: {text}"


def calibration_train(cfg: SearchConfig) -> TrainConfig:
    """The training of each learning-rate calibration run of `cfg` (its trial length resolved):
    the trial's, at `lr_calibration_tokens_per_param` tokens per parameter when set and the
    trials' length is given in tokens per parameter (a study's: its verification's length, where
    the profiles are decided), then `lr_calibration_fraction` of that length. A budget sweep
    calibrates at its middle budget (`default_base_width`)."""
    train = cfg.train
    if cfg.lr_calibration_tokens_per_param and train.tokens_per_param:
        model = trial_shape(cfg, ProfileSpec.parse("uniform"))[2]
        train = with_tokens_per_param(
            train.replace(tokens_per_param=cfg.lr_calibration_tokens_per_param),
            count_params(model).non_embedding,
            model.seq_len,
        )
    return train.replace(steps=calibration_steps(train.steps, cfg.lr_calibration_fraction))


def calibration_weight(cfg: SearchConfig) -> float:
    """One calibration run's length in trial lengths of `cfg` (resolved here): 4 in a study that
    screens at 5 tokens per parameter and calibrates at 20, `lr_calibration_fraction` otherwise;
    what plans count each calibration run as."""
    cfg = resolve_trial_length(cfg)
    return calibration_train(cfg).steps / max(cfg.train.steps, 1)
