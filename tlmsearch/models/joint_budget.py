"""One exact budget over MLP and attention width: per-layer heads, MLP widths solved to match.

A budget (`tlmsearch.profiles.Budget`) fixes the uniform model: every layer at the preset's
heads and `base_width` MLP units. A joint architecture also moves attention width layer by
layer (query heads H_l and key/value heads G_l, `ModelConfig.attn_heads` / `kv_heads`). Its
attention then holds Δ more (or fewer) non-embedding parameters than the uniform model's, and
the MLPs give (or take) exactly Δ back:

    Δ = non_embedding(heads, uniform MLP) - non_embedding(uniform)     (`models.counts`, any family)
    Σ_l f_l = n_layers * base_width - Δ / (3 d)                        (SwiGLU: 3 d per hidden unit)

and the MLP widths are the profile's shape projected onto that total with the budget's rules
(multiples of `multiple_of` within [min_width, max_width], water-filling and largest remainder:
`profiles.project_to_total`). So every joint architecture of a budget has exactly the uniform
model's non-embedding parameters. That is possible only when Δ is a whole number of MLP steps,
a multiple of 3 d multiple_of, and the MLPs can still hold the rest; `attention_delta`,
`mlp_units` and `is_feasible` say which head choices are, and `joint_config` refuses the others
in one line. Pure: integers in, integers out (no torch).

[OURS] Parameters, not FLOPs, are held equal: attention FLOPs also grow with the sequence
length (T² scores), so an equal-FLOPs budget would trade differently; it is not built yet.
"""

from __future__ import annotations

from collections.abc import Sequence

from tlmsearch.config import ModelConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models.counts import count_params
from tlmsearch.profiles.budget import Budget, project_to_total

__all__ = ["attention_delta", "is_feasible", "joint_config", "mlp_step", "mlp_units"]


def _check_uniform(uniform: ModelConfig, budget: Budget) -> None:
    if not uniform.uniform_attention or uniform.mlp_widths != budget.uniform():
        raise ConfigError(
            "the reference of a joint budget must be the budget's uniform model "
            f"(mlp_widths {budget.n_layers} x {budget.base_width}, no attn_heads or kv_heads)"
        )


def _with_heads(
    uniform: ModelConfig, attn_heads: Sequence[int], kv_heads: Sequence[int], widths: Sequence[int]
) -> ModelConfig:
    return uniform.replace(attn_heads=tuple(attn_heads), kv_heads=tuple(kv_heads), mlp_widths=tuple(widths))


def mlp_step(uniform: ModelConfig, budget: Budget) -> int:
    """Parameters of the smallest change of the MLPs' total: 3 d multiple_of."""
    return 3 * uniform.d_model * budget.multiple_of


def attention_delta(uniform: ModelConfig, attn_heads: Sequence[int], kv_heads: Sequence[int] = ()) -> int:
    """Non-embedding parameters that per-layer heads add to `uniform` (negative: remove), MLPs
    unchanged: the family's own attention terms (projections, gates, norms) through its spec."""
    return _delta(uniform, _with_heads(uniform, attn_heads, kv_heads, uniform.mlp_widths))


def _delta(uniform: ModelConfig, moved: ModelConfig) -> int:
    return count_params(moved).non_embedding - count_params(uniform).non_embedding


def _units(uniform: ModelConfig, budget: Budget, delta: int) -> int | None:
    if delta % mlp_step(uniform, budget):
        return None
    units = budget.total - delta // (3 * uniform.d_model)
    return units if budget.n_layers * budget.lo <= units <= budget.n_layers * budget.hi else None


def mlp_units(
    uniform: ModelConfig, budget: Budget, attn_heads: Sequence[int], kv_heads: Sequence[int] = ()
) -> int | None:
    """MLP hidden units that make the heads' model exactly as large as `uniform`, or None when
    none can: Δ not a multiple of 3 d multiple_of, or a total the budget's widths cannot hold."""
    _check_uniform(uniform, budget)
    return _units(uniform, budget, attention_delta(uniform, attn_heads, kv_heads))


def is_feasible(uniform: ModelConfig, budget: Budget, attn_heads: Sequence[int], kv_heads: Sequence[int] = ()) -> bool:
    """Whether MLP widths of `budget` can balance these heads exactly (`mlp_units` is not None)."""
    return mlp_units(uniform, budget, attn_heads, kv_heads) is not None


def joint_config(
    uniform: ModelConfig,
    budget: Budget,
    raw_widths: Sequence[float],
    attn_heads: Sequence[int],
    kv_heads: Sequence[int] = (),
) -> ModelConfig:
    """The model with per-layer `attn_heads` / `kv_heads` (() = uniform) and MLP widths of the
    shape `raw_widths` (relative, any scale) holding exactly the non-embedding parameters of
    `uniform`, the budget's uniform model; a ConfigError in one line when no widths can."""
    _check_uniform(uniform, budget)
    probe = _with_heads(uniform, attn_heads, kv_heads, uniform.mlp_widths)  # checks the heads themselves
    delta = _delta(uniform, probe)
    units = _units(uniform, budget, delta)
    if units is None:
        step = mlp_step(uniform, budget)
        reason = (
            f"is not a multiple of 3 x d_model x multiple_of = {step:,}"
            if delta % step
            else f"leaves {budget.total - delta // (3 * uniform.d_model):,} MLP units, outside "
            f"[{budget.n_layers * budget.lo:,}, {budget.n_layers * budget.hi:,}]"
        )
        raise ConfigError(
            f"attn_heads={list(probe.attn_heads) or 'uniform'}, kv_heads={list(probe.kv_heads) or 'as attn_heads'} "
            f"change the non-embedding parameters by {delta:+,}, which {reason}: "
            "no MLP widths of the budget balance them exactly; choose other heads"
        )
    return probe.replace(mlp_widths=project_to_total(raw_widths, budget, units))
