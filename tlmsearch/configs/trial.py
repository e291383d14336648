"""One trial, resolved once and carried: `TrialSpec` (what it trains) and `TrialOutcome` (how it ended).

    spec = trial_spec(cfg, {"profile": "cosine", "seed": 3, "number": 7}, vocab_size=256)
    spec.model.mlp_widths, spec.train.lr, spec.budget.base_width   # exact, nothing left to derive

A trial used to be re-derived at every hop: the driver put small keys into its Tune config, the
worker re-resolved the budget, widths and model from the search config, and the driver's
recorder rebuilt them once more for a trial that failed before the worker got that far.
`trial_spec` is now the single place a trial is resolved (budget, exact-sum widths, model with
the tokenizer's vocabulary, the TrainConfig with its seed, threads, device and a calibration
trial's rate); the driver builds it when it creates the trial's Tune config, the spec crosses
Ray inside that config (`config[SPEC] = spec.to_dict()`), the worker trains exactly it, and the
record is made from the spec and the worker's `TrialOutcome`.

A trial that cannot train (its space failed to sample a profile, or its profile does not fit
the budget) still gets a spec: with `error` set and no model. The worker reports it failed at
once with that reason, so it becomes a failed record, never a crashed search.

The small identity keys stay in the Tune config beside the spec (`OWN_KEYS`): Optuna's
params, the scheduler's baseline test and a checkpoint's identity (`tuning.checkpoints`) read
them. Pure: configs and profiles only, no torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tlmsearch.configs.resolve import budget_for, default_base_width, trial_shape
from tlmsearch.configs.search import SPEED_OBJECTIVES, SearchConfig
from tlmsearch.core.base import Config, DataConfig, ModelConfig, TrainConfig, check_choice
from tlmsearch.profiles import Budget, ProfileSpec

SPEC = "spec"  # Tune config key: the trial's TrialSpec as a dict
OUTCOME = "outcome"  # key of a worker's (flat) Tune report: the trial's TrialOutcome so far, as a dict
TRAIN_RESTARTS = "train_restarts"  # key of a report: restarts of a trial's Ray Train workers this session
RESTORE = "restore"  # Tune config key: the checkpoint a resumed trial starts from
SPACE_ERROR = "space_error"  # Tune config key: why the space failed to sample this trial
# Tune config keys that are ours; the others are the params Optuna asked (the record's `params`)
OWN_KEYS = frozenset({"profile", "baseline", "number", "kind", "seed", "index", SPACE_ERROR, RESTORE, SPEC})
OUTCOME_STATUSES = ("running", "ended", "failed")  # a trial's last report: training on, trained out, raised


def sampled_params(config: Mapping[str, Any]) -> dict[str, Any]:
    """The Optuna params (and extra keys such as `lr`) in a trial's Tune config."""
    return {k: v for k, v in config.items() if k not in OWN_KEYS}


def trial_train_config(cfg: SearchConfig, seed: int) -> TrainConfig:
    """The TrainConfig of one trial: threads = CPUs per trial unless set; CUDA with bf16 for GPU trials."""
    threads = cfg.train.threads or max(1, int(cfg.cpus_per_trial))
    changes: dict[str, Any] = {"seed": seed, "threads": threads}
    if cfg.gpu_share > 0:
        changes.update(device="cuda", dtype="bfloat16")
    return cfg.train.replace(**changes)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrialSpec(Config):
    """Everything one trial trains, resolved on the driver (see the module doc)."""

    kind: str  # the record kind: "baseline", "sampled", "verify", "noise", "lr", ...
    seed: int
    number: int = -1  # its Optuna trial number (-1 outside the study)
    baseline: str | None = None  # the baseline it is (a profile's canonical text)
    params: dict[str, Any] = dataclasses.field(default_factory=dict)  # the sampled Optuna params
    profile: str = ""  # canonical ProfileSpec text ("" when none parsed)
    base_width: int  # the budget's base width (a sweep's sampled one, else the search's)
    budget: Budget
    model: ModelConfig | None = None  # with the tokenizer's vocabulary; None when it cannot train
    train: TrainConfig
    data: DataConfig
    reference: ModelConfig | None = None  # the uniform model a speed objective is measured against
    resources: dict[str, float] = dataclasses.field(default_factory=dict)  # what it asks Ray for (per worker)
    workers: int = 1  # data-parallel workers that train it (a Ray Train run inside the Tune trial when > 1)
    error: str | None = None  # why it cannot train (it fails at once with this reason)

    def __post_init__(self) -> None:
        if (self.model is None) == (self.error is None):
            raise ValueError("TrialSpec: exactly one of model and error must be set")

    @property
    def widths(self) -> tuple[int, ...]:
        return tuple(self.model.mlp_widths) if self.model is not None else ()


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrialOutcome(Config):
    """How a trial ended, as its worker's last report carries it (in one key of the flat report).

    `status` "running" is an evaluation with training still going (the last one a trial stopped
    by the scheduler leaves), "ended" a training that ran out, "failed" one that raised (or a
    spec that could not train); the record turns it into complete/stopped/failed by its steps.
    """

    status: str = "running"
    reason: str | None = None
    steps: int = 0
    curve: tuple[dict[str, Any], ...] = ()
    metrics: dict[str, Any] = dataclasses.field(default_factory=dict)  # the last evaluation + counts
    node: str | None = None
    devices: tuple[str, ...] = ()
    resources: dict[str, float] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_choice("outcome status", self.status, OUTCOME_STATUSES)


def _with_vocab(model: ModelConfig, vocab_size: int | None) -> ModelConfig:
    return model if not vocab_size or model.vocab_size == vocab_size else model.replace(vocab_size=vocab_size)


def trial_spec(cfg: SearchConfig, config: Mapping[str, Any], vocab_size: int | None = None) -> TrialSpec:
    """THE resolution of one trial: its Tune `config` (profile, seed, base_width, baseline,
    number, kind, lr, space_error, Optuna params) under search `cfg`, with the tokenizer's
    `vocab_size` (None keeps the preset's). A profile that does not parse or that the budget
    cannot hold, or a space error, gives a spec with `error` and no model (module doc)."""
    seed = int(config.get("seed", cfg.seed))
    train = trial_train_config(cfg, seed)
    if config.get("lr") is not None:  # a learning-rate calibration (or rate check) trial: its rate
        train = train.replace(lr=float(config["lr"]))
    base_width = int(config.get("base_width") or default_base_width(cfg))
    budget = budget_for(cfg, base_width)
    baseline = config.get("baseline") or None
    error = str(config[SPACE_ERROR]) if config.get(SPACE_ERROR) else None
    profile, model, reference = "", None, None
    if error is None:
        try:
            spec = ProfileSpec.parse(str(config.get("profile", "")))
            profile = str(spec)
            model = _with_vocab(trial_shape(cfg, spec, base_width)[2], vocab_size)
        except Exception as exc:  # noqa: BLE001 - any profile that cannot train is a failed trial, not a crash
            error = f"{type(exc).__name__}: {exc}"
    if model is not None and set(cfg.objectives) & set(SPEED_OBJECTIVES):
        reference = _with_vocab(trial_shape(cfg, ProfileSpec.parse("uniform"))[2], vocab_size)
    resources = {"CPU": float(cfg.cpus_per_trial)} | ({"GPU": cfg.gpu_share} if cfg.gpu_share else {})
    return TrialSpec(
        kind=str(config.get("kind") or ("baseline" if baseline else "sampled")),
        seed=seed,
        number=int(config.get("number", -1)),
        baseline=str(baseline) if baseline else None,
        params=sampled_params(config),
        profile=profile,
        base_width=base_width,
        budget=budget,
        model=model,
        train=train,
        data=cfg.data,
        reference=reference,
        resources=resources,
        workers=cfg.workers_per_trial,
        error=error,
    )
