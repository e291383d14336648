"""What deciding a run's verification would cost: a `PlanConfig` from what the run trained (pure).

    deciding = tlmsearch.load("runs/my-search").deciding_plan(gpu="h200", gpus=1)
    print(deciding.line); print(format_plan(plan(deciding.config)))

An inconclusive verdict says how many seeds per profile the observed paired spread asks for
("about 219 seeds per profile would decide it"). This prices exactly that re-run on GPUs: the
verification's model shape (its records' `ModelConfig`: width, depth, heads, sequence length,
the tokenizer's vocabulary, tied or not), its MLP budget, batch, evaluation settings and steps,
its number of profiles, and the seeds of the verdict (or `seeds` when given; a decided verdict
prices the seeds it took). No search: the profiles are the verified ones. The run directory is
read by `tlmsearch.api.Study.deciding_plan`; this module only turns what it read into a plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any, NamedTuple, Protocol

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import ModelConfig
from tlmsearch.costs.plan import SHAPE_FIELDS, PlanConfig, model_of
from tlmsearch.errors import ConfigError
from tlmsearch.models.counts import flops_per_token

HARDWARE_FIELDS = ("gpu", "mfu", "gpus", "gpus_per_trial", "link_gb_s", "step_ms")  # what the run does not set
TRAIN_FIELDS = ("batch_size", "grad_accum", "eval_interval", "eval_windows")  # what the run's records set


class VerdictLike(Protocol):
    """The parts of `tlmsearch.analysis.verdict.Verdict` a price needs."""

    @property
    def outcome(self) -> str: ...
    @property
    def n_seeds(self) -> int: ...
    @property
    def n_profiles(self) -> int: ...
    @property
    def seeds_to_decide(self) -> int | None: ...


class Deciding(NamedTuple):
    """A run's verdict and the plan that would re-run its verification at `seeds` seeds."""

    config: PlanConfig
    outcome: str  # the verdict's: better, near_optimal or inconclusive
    n_seeds: int  # the seeds the verdict decided on
    seeds: int  # the seeds per profile priced
    line: str  # one sentence for people: what is priced and why


def deciding(
    where: str,
    verdict: VerdictLike,
    models: Sequence[ModelConfig],
    train: Mapping[str, Any],
    steps: int,
    *,
    preset_name: str,
    base_width: int,
    seeds: int | None = None,
    **hardware: Any,
) -> Deciding:
    """The plan of re-running a verification (`models`: what its runs trained, `train` and
    `steps`: one run's training settings and length) with the seeds that would decide `verdict`.

    `hardware` are `PlanConfig`'s hardware fields (`gpu`, `mfu`, `gpus`, `gpus_per_trial`,
    `step_ms`); anything else is the run's and refused in one line."""
    if unknown := sorted(set(hardware) - set(HARDWARE_FIELDS)):
        raise ConfigError(
            f"{', '.join(unknown)}: not a hardware setting; the run sets the rest "
            f"(allowed: {', '.join(HARDWARE_FIELDS)})"
        )
    if not models:
        raise ConfigError(f"{where}: no finished verification run to take a model from")
    if seeds is None:
        seeds = verdict.seeds_to_decide if verdict.outcome == "inconclusive" else verdict.n_seeds
        if seeds is None:
            raise ConfigError(
                f"{where}: the verdict gives no seed count that would decide it (too little spread to plan from); "
                "give --seeds N"
            )
    model = models[-1]
    config = PlanConfig(
        preset=preset_name,
        archs=(model.arch,),
        model={f: getattr(model, f) for f in SHAPE_FIELDS},
        base_width=0 if base_width == preset(preset_name).base_width else base_width,
        tie_embeddings=model.tie_embeddings,
        trials=0,
        verify_profiles=verdict.n_profiles,
        seeds=seeds,
        verify_steps=steps,
        **{f: train[f] for f in TRAIN_FIELDS if f in train},
        **hardware,
    )
    why = (
        f"what the paired spread over those {verdict.n_seeds} asks for"
        if verdict.outcome == "inconclusive" and seeds == verdict.seeds_to_decide
        else "as asked"
        if seeds != verdict.n_seeds
        else "the seeds it took"
    )
    line = (
        f"{where}: {verdict.outcome.replace('_', '-')} on {verdict.n_seeds} seeds; priced: its verification again "
        f"with {seeds} seeds per profile ({why}), {verdict.n_profiles} profiles, {steps:,} steps a run, "
        "its shape and batch"
    )
    trained = fmean(flops_per_token(m) for m in models)
    priced = flops_per_token(model_of(config, model.arch)[1])
    if abs(trained / priced - 1) > 0.01:  # architecture options or joint shapes the plan's preset model lacks
        line += (
            f" (its models train at {trained:,.0f} FLOPs per token on average, the plan's at {priced:,.0f}: "
            "the plan prices the preset's model of this shape)"
        )
    return Deciding(config, verdict.outcome, verdict.n_seeds, seeds, line)


__all__ = ["HARDWARE_FIELDS", "Deciding", "VerdictLike", "deciding"]
