"""What a study costs before it runs: tokens, FLOPs, GPU-hours and wall time (pure, no torch).

A study has two phases that run one after the other, because verification needs the search's
result: a **search** of `trials` trials of `steps` optimizer steps each, then a
**verification** that re-trains `verify_profiles` profiles (the best ones plus the baselines;
`tlmsearch verify` re-trains its top 5 and the 4 default baselines) with `seeds` seeds each for
`verify_steps` steps. Every trial trains `steps * batch_size * grad_accum * seq_len` tokens.

FLOPs come from the analytic `tlmsearch.models.flops_per_token` (training: forward and
backward), evaluated on the budget's uniform profile; every profile of a budget has the same
parameter count and the same dense FLOPs, so one figure serves every trial. The periodic
evaluations (`eval_windows` windows of `seq_len` tokens every `eval_interval` steps and at the
last step) are forward passes only, counted at one third of the training FLOPs per token.

GPU time is `FLOPs / (peak * mfu)`: `peak` is the GPU's dense BF16 tensor-core figure from its
vendor's datasheet, and `mfu` the share of it a trial sustains. With fractional GPUs per trial
(`gpus_per_trial` < 1, e.g. 0.25 packs four trials on one GPU) `mfu` is the utilisation of the
whole GPU summed over the trials packed on it; a trial on a fraction `g` of a GPU runs
`1 / g` times longer than alone. With `gpus_per_trial` > 1 (a whole number) the trial is
assumed to keep `mfu` on every GPU it holds (data parallel). Wall time counts waves: each phase
runs `slots` trials at once (`gpus * floor(1 / g)`, or `gpus // g`), all trials of a phase take
equally long, and the last wave may leave slots idle (`packing` is the used share). Search
trials are costed at full length: ASHA stops most of them early, so the search phase is an
upper bound. Start-up, data loading, checkpointing and compilation are not counted.

A step costs at least `step_ms` milliseconds of a whole GPU: a small model is bound by kernel
launches and the optimizer's per-tensor work, not by its FLOPs (a 0.1 M-parameter model's step
is a few microseconds of matrix products at 40 % MFU), so a run's GPU time is the larger of its
FLOP time and `steps * step_ms`. Packed trials time-slice the GPU, so a trial on a fraction `g`
of it takes `step_ms / g` per step. The default, 10 ms, is the one GPU measurement the project
has (bench/README.md, section 9): on an H200, 18 verification runs of 300 steps at the `cpu-s`
shape, 16 trials per GPU in float32, took 53 s of the GPU, 9.8 ms a step with start-up and
evaluations included. It binds only for small models: a `170m` step at the default batch is
tens of milliseconds of FLOPs. `step_ms=0` counts FLOPs only.

Memory: `static_gb` is the trial's weights, gradients and AdamW moments at 16 bytes per
parameter (fp32 master weights under bf16 autocast); activations come on top and depend on the
micro-batch, so a plan only warns when the static memory alone exceeds the trial's share of the
GPU's memory.

Peak figures (dense BF16 tensor core, without 2:4 structured sparsity; the datasheets print
the sparse figure, twice the dense one, and mark it "with sparsity"):
- NVIDIA H100 SXM5 (H100 Tensor Core GPU datasheet): 1,979 TFLOPS with sparsity -> 989.5
  dense; 80 GB HBM3.
- NVIDIA H100 PCIe (same datasheet, PCIe column): 1,513 TFLOPS with sparsity -> 756.5 dense;
  80 GB.
- NVIDIA H200 SXM (H200 Tensor Core GPU datasheet): 1,979 TFLOPS with sparsity -> 989.5
  dense (the same GH100 compute as H100 SXM); 141 GB HBM3e.
- NVIDIA A100 80GB SXM (A100 Tensor Core GPU datasheet): 312 TFLOPS dense, 624 with sparsity;
  80 GB HBM2e.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

from tlmsearch.configs.base import (
    ARCHITECTURE_NAMES,
    Config,
    TrainConfig,
    check_choice,
    check_positive,
    option,
    steps_for_tokens_per_param,
)
from tlmsearch.configs.counts import count_params, flops_per_token
from tlmsearch.configs.presets import preset
from tlmsearch.configs.validate import check_seed_count
from tlmsearch.errors import ConfigError

BYTES_PER_PARAM_STATIC = 16  # fp32 weights + fp32 gradients + two fp32 AdamW moments
EVAL_FLOPS_SHARE = 1.0 / 3.0  # a forward pass is ~1/3 of a training step's FLOPs per token
STEP_FLOOR_MS = 10.0  # GPU time a step costs at least (measured once on an H200, see the module docstring)


class GPU(NamedTuple):
    """A GPU model: its dense BF16 tensor-core peak (FLOP/s) and its memory (GB)."""

    name: str
    bf16_dense_flops: float
    memory_gb: float


GPUS: dict[str, GPU] = {
    "h100-sxm": GPU("NVIDIA H100 SXM5 80GB", 989.5e12, 80.0),
    "h100-pcie": GPU("NVIDIA H100 PCIe 80GB", 756.5e12, 80.0),
    "h200": GPU("NVIDIA H200 SXM 141GB", 989.5e12, 141.0),
    "a100-80gb": GPU("NVIDIA A100 SXM 80GB", 312e12, 80.0),
}

# Preset fields a plan may override (the shape); `base_width` 0 keeps the preset's
SHAPE_FIELDS: tuple[str, ...] = ("d_model", "n_layers", "n_heads", "seq_len", "vocab_size")

_TRAIN = TrainConfig()


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlanConfig(Config):
    """A study to cost. Steps may be given as tokens instead (`tokens` > 0 overrides `steps`)."""

    preset: str = option("170m", "model shape preset, e.g. 170m, 340m, 760m, 1.3b")
    archs: tuple[str, ...] = ("transformer",)  # flag: --arch a,b (comma-separated)
    model: dict[str, int] = dataclasses.field(default_factory=dict)  # shape overrides (SHAPE_FIELDS): --layers ...
    base_width: int = option(0, "MLP width per layer; 0 = the preset's")
    tie_embeddings: bool = True  # flag: --untied
    trials: int = option(32, "search trials, baselines included, costed at full length; 0 = no search")
    steps: int = option(_TRAIN.steps, "optimizer steps of a search trial")
    tokens: int = option(0, "tokens of a search trial instead of --steps, not with it (e.g. 2e8); 0 = use --steps")
    tokens_per_param: float = option(
        0.0,
        "every run's length in tokens per NON-EMBEDDING parameter, each architecture's steps from its own count, "
        "instead of --steps/--tokens and --verify-steps/--verify-tokens (e.g. 20); 0 = off",
    )
    verify_profiles: int = option(9, "profiles re-trained with seeds (verify: top 5 + 4 baselines)")
    seeds: int = option(3, "seeds per verified profile")
    verify_steps: int = option(0, "steps of a verification run; 0 = --steps")
    verify_tokens: int = option(0, "tokens of a verification run instead of --verify-steps, not with it")
    batch_size: int = option(_TRAIN.batch_size, "sequences per micro-batch")
    grad_accum: int = option(_TRAIN.grad_accum, "micro-batches per step")
    eval_interval: int = option(_TRAIN.eval_interval, "steps between evaluations")
    eval_windows: int = option(_TRAIN.eval_windows, "validation windows per evaluation")
    gpu: str = option("h100-sxm", "GPU model", choices=tuple(GPUS))
    mfu: float = option(0.4, "share of the dense BF16 peak a trial sustains")
    gpus: int = option(8, "GPUs in the cluster")
    gpus_per_trial: float = option(1.0, "GPUs per trial; 0.25 packs four trials per GPU; above 1 a whole number")
    step_ms: float = option(
        STEP_FLOOR_MS,
        "GPU milliseconds a step costs at least (kernel launches bound small models; 10 = measured on an H200 "
        "at cpu-s, 16 trials per GPU); 0 = FLOPs only",
    )

    def __post_init__(self) -> None:
        preset(self.preset)  # a ConfigError naming the presets
        if not self.archs:
            raise ConfigError(f"archs is empty; choose one or more of: {', '.join(ARCHITECTURE_NAMES)}")
        for arch in self.archs:
            check_choice("arch", arch, ARCHITECTURE_NAMES)
        for key, value in self.model.items():
            check_choice("model override", key, SHAPE_FIELDS)
            check_positive(key, value)
        check_choice("gpu", self.gpu, GPUS)
        for name in ("steps", "batch_size", "grad_accum", "eval_interval", "gpus"):
            check_positive(name, getattr(self, name))
        zero_allowed = ("base_width", "trials", "tokens", "verify_profiles", "verify_steps", "verify_tokens")
        for name in (*zero_allowed, "tokens_per_param"):
            check_positive(name, getattr(self, name), allow_zero=True)
        if self.tokens_per_param and (self.tokens or self.verify_tokens or self.verify_steps):
            raise ConfigError(
                "tokens_per_param sets the length of every run: give it without tokens, verify_tokens or verify_steps"
            )
        check_seed_count("seeds", self.seeds)  # verify's and the study's rule: at least 2 seeds
        check_positive("eval_windows", self.eval_windows, allow_zero=True)
        if not 0 < self.mfu <= 1:
            raise ConfigError(f"mfu={self.mfu!r} must lie in (0, 1] (a share of the GPU's peak, e.g. 0.4)")
        check_positive("gpus_per_trial", self.gpus_per_trial)
        check_positive("step_ms", self.step_ms, allow_zero=True)
        if self.gpus_per_trial > 1 and not float(self.gpus_per_trial).is_integer():
            raise ConfigError(
                f"gpus_per_trial={self.gpus_per_trial:g}: above 1 it must be a whole number "
                "(Ray shares only fractions of one GPU)"
            )
        if self.gpus_per_trial > self.gpus:
            raise ConfigError(f"gpus_per_trial={self.gpus_per_trial:g} exceeds gpus={self.gpus}")
        if not self.trials and not self.verify_profiles:
            raise ConfigError("trials=0 and verify_profiles=0: the study runs nothing")


class Phase(NamedTuple):
    """One phase of a study (search or verification) for one architecture."""

    name: str
    runs: int  # training runs in the phase
    steps: int  # optimizer steps per run
    tokens_per_run: int  # training tokens per run
    flops_per_run: float  # training + evaluation FLOPs per run
    gpu_hours_per_run: float
    step_bound: bool  # the step floor (`step_ms`), not the FLOPs, sets the run's GPU time
    run_hours: float  # wall hours of one run on its share of GPUs
    waves: int  # rounds of `slots` runs at once
    wall_hours: float
    tokens: int  # all runs
    flops: float
    gpu_hours: float


class ArchPlan(NamedTuple):
    arch: str
    params_total: int
    params_non_embedding: int
    flops_per_token: float  # training FLOPs per token (forward + backward)
    static_gb: float  # weights, gradients and AdamW moments of one trial
    phases: tuple[Phase, ...]
    tokens: int
    flops: float
    gpu_hours: float
    wall_hours: float


class Plan(NamedTuple):
    """A costed study: one ArchPlan per architecture, run one after the other."""

    config: PlanConfig
    shape: dict[str, int]  # d_model, n_layers, n_heads, seq_len, vocab_size, base_width
    gpu: GPU
    sustained_flops: float  # peak * mfu, per GPU
    slots: int  # trials at once on the cluster
    packing: float  # used share of the slot-hours over the whole study
    tokens_per_step: int
    archs: tuple[ArchPlan, ...]
    tokens: int
    flops: float
    gpu_hours: float
    wall_hours: float
    warnings: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for `--json`."""
        out = {f: getattr(self, f) for f in self._fields if f not in ("config", "gpu", "archs")}
        out["warnings"] = list(self.warnings)
        out["config"] = self.config.to_dict()
        out["gpu"] = self.gpu._asdict()
        out["archs"] = [{**a._asdict(), "phases": [p._asdict() for p in a.phases]} for a in self.archs]
        return out


def slots_for(gpus: int, gpus_per_trial: float) -> int:
    """How many trials fit at once: `floor(1/g)` per GPU for fractions, `gpus // g` otherwise."""
    if gpus_per_trial <= 1:
        return gpus * math.floor(1.0 / gpus_per_trial + 1e-9)
    return gpus // int(gpus_per_trial)


def steps_for(tokens: int, tokens_per_step: int) -> int:
    """Optimizer steps that train at least `tokens` tokens."""
    return -(-tokens // tokens_per_step)


def model_of(cfg: PlanConfig, arch: str) -> Any:
    """The (shaped preset, uniform ModelConfig) a plan prices `arch` at."""
    shape = preset(cfg.preset).replace(**cfg.model)
    if cfg.base_width:
        shape = shape.replace(base_width=cfg.base_width)
    return shape, shape.model_config(arch, tie_embeddings=cfg.tie_embeddings)


def _phase(cfg: PlanConfig, name: str, runs: int, steps: int, seq_len: int, fpt: float, slots: int) -> Phase:
    tokens_per_run = steps * cfg.batch_size * cfg.grad_accum * seq_len
    evals = steps // cfg.eval_interval + (steps % cfg.eval_interval != 0)  # every interval and the last step
    eval_tokens = evals * cfg.eval_windows * seq_len
    flops_per_run = tokens_per_run * fpt + eval_tokens * fpt * EVAL_FLOPS_SHARE
    flop_seconds = flops_per_run / (GPUS[cfg.gpu].bf16_dense_flops * cfg.mfu)
    gpu_seconds = max(flop_seconds, steps * cfg.step_ms / 1000.0)
    run_hours = gpu_seconds / cfg.gpus_per_trial / 3600.0
    waves = -(-runs // slots)
    return Phase(
        name=name,
        runs=runs,
        steps=steps,
        tokens_per_run=tokens_per_run,
        flops_per_run=flops_per_run,
        gpu_hours_per_run=gpu_seconds / 3600.0,
        step_bound=gpu_seconds > flop_seconds,
        run_hours=run_hours,
        waves=waves,
        wall_hours=waves * run_hours,
        tokens=runs * tokens_per_run,
        flops=runs * flops_per_run,
        gpu_hours=runs * gpu_seconds / 3600.0,
    )


def plan(cfg: PlanConfig) -> Plan:
    """Cost the study `cfg` describes (see the module docstring for every assumption)."""
    gpu = GPUS[cfg.gpu]
    slots = slots_for(cfg.gpus, cfg.gpus_per_trial)
    warnings: list[str] = []
    if cfg.gpus_per_trial > 1:
        warnings.append(
            f"gpus_per_trial={cfg.gpus_per_trial:g}: the plan assumes data-parallel training over a trial's GPUs, "
            "but tlmsearch's trainer uses one device per trial today, so the others would idle"
        )
    arch_plans = []
    shape: Any = None
    for arch in cfg.archs:
        shape, model = model_of(cfg, arch)
        tokens_per_step = cfg.batch_size * cfg.grad_accum * shape.seq_len
        counts = count_params(model)
        steps = steps_for(cfg.tokens, tokens_per_step) if cfg.tokens else cfg.steps
        if cfg.tokens_per_param:  # each architecture's own non-embedding count
            steps = steps_for_tokens_per_param(cfg.tokens_per_param, counts.non_embedding, tokens_per_step)
        vsteps = steps_for(cfg.verify_tokens, tokens_per_step) if cfg.verify_tokens else cfg.verify_steps or steps
        fpt = flops_per_token(model)
        phases = tuple(
            _phase(cfg, name, runs, n, shape.seq_len, fpt, slots)
            for name, runs, n in (("search", cfg.trials, steps), ("verify", cfg.verify_profiles * cfg.seeds, vsteps))
            if runs
        )
        static_gb = counts.total * BYTES_PER_PARAM_STATIC / 1e9
        share = gpu.memory_gb * min(cfg.gpus_per_trial, 1.0)
        if static_gb > share:
            warnings.append(
                f"{arch}: weights, gradients and AdamW moments alone need {static_gb:.1f} GB, more than the "
                f"{share:.0f} GB a trial gets with gpus_per_trial={cfg.gpus_per_trial:g} on {gpu.name}"
            )
        if bound := [ph.name for ph in phases if ph.step_bound]:
            warnings.append(
                f"{arch}: a step's FLOPs take less than the {cfg.step_ms:g} ms a step costs on a GPU at least "
                f"(--step-ms), so the {' and '.join(bound)} GPU time is counted from steps, not FLOPs: the model is "
                "too small to keep the GPU's tensor cores busy"
            )
        arch_plans.append(
            ArchPlan(
                arch=arch,
                params_total=counts.total,
                params_non_embedding=counts.non_embedding,
                flops_per_token=fpt,
                static_gb=static_gb,
                phases=phases,
                tokens=sum(p.tokens for p in phases),
                flops=sum(p.flops for p in phases),
                gpu_hours=sum(p.gpu_hours for p in phases),
                wall_hours=sum(p.wall_hours for p in phases),
            )
        )
    all_phases = [p for a in arch_plans for p in a.phases]
    used = sum(p.runs * p.run_hours for p in all_phases)
    offered = sum(p.waves * slots * p.run_hours for p in all_phases)
    return Plan(
        config=cfg,
        shape={f: getattr(shape, f) for f in (*SHAPE_FIELDS, "base_width")},
        gpu=gpu,
        sustained_flops=gpu.bf16_dense_flops * cfg.mfu,
        slots=slots,
        packing=used / offered if offered else 0.0,
        tokens_per_step=cfg.batch_size * cfg.grad_accum * shape.seq_len,
        archs=tuple(arch_plans),
        tokens=sum(a.tokens for a in arch_plans),
        flops=sum(a.flops for a in arch_plans),
        gpu_hours=sum(a.gpu_hours for a in arch_plans),
        wall_hours=sum(a.wall_hours for a in arch_plans),
        warnings=tuple(warnings),
    )


# ----------------------------------------------------------------------------- text


def _si(x: float, unit: str = "") -> str:
    for factor, prefix in ((1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}".rstrip()


def _hours(h: float) -> str:
    if h < 1:
        return f"{h * 60:.2g} min"
    return f"{h:,.1f} h" if h < 48 else f"{h:,.0f} h ({h / 24:,.1f} days)"


def _gpu_hours(h: float) -> str:
    """GPU-hours with the digits a small figure needs (never a bare 0.0 for work that costs)."""
    if h < 0.1:
        return f"{h * 3600:.3g} GPU-s" if h < 1 / 60 else f"{h * 60:.3g} GPU-min"
    return f"{h:,.1f} GPU-h" if h < 1000 else f"{h:,.0f} GPU-h"


def format_plan(p: Plan) -> str:
    """The plan as a short table for people."""
    c, s = p.config, p.shape
    lines = [
        f"preset {c.preset}: d_model {s['d_model']}, {s['n_layers']} layers, {s['n_heads']} heads, "
        f"seq {s['seq_len']}, vocab {s['vocab_size']}, MLP width {s['base_width']} per layer (budget)",
        f"{p.tokens_per_step:,} tokens per step (batch {c.batch_size} x accum {c.grad_accum} x seq {s['seq_len']})",
        f"{p.gpu.name}: {_si(p.gpu.bf16_dense_flops, 'FLOP/s')} dense BF16 peak, at MFU {c.mfu:.0%} "
        f"{_si(p.sustained_flops, 'FLOP/s')}, at least {c.step_ms:g} ms a step; {c.gpus} GPUs, "
        f"{c.gpus_per_trial:g} GPU per trial -> {p.slots} trials at once",
    ]
    for a in p.archs:
        lines.append("")
        lines.append(
            f"{a.arch}: {a.params_total / 1e6:,.1f} M parameters "
            f"({a.params_non_embedding / 1e6:,.1f} M non-embedding), "
            f"{_si(a.flops_per_token, 'FLOP')} per training token, {a.static_gb:.1f} GB weights+grads+AdamW per trial"
        )
        for ph in a.phases:
            lines.append(
                f"  {ph.name:<7} {ph.runs:>4} runs x {ph.steps:,} steps = {_si(ph.tokens_per_run)} tokens, "
                f"{_si(ph.flops_per_run, 'FLOP')}, {_gpu_hours(ph.gpu_hours_per_run)} per run"
                f"{' (step-bound)' if ph.step_bound else ''}; "
                f"{ph.waves} wave{'s' if ph.waves != 1 else ''} of {_hours(ph.run_hours)} -> "
                f"{_hours(ph.wall_hours)} wall, "
                f"{_gpu_hours(ph.gpu_hours)}"
            )
        lines.append(
            f"  total   {_si(a.tokens)} tokens, {_si(a.flops, 'FLOP')}, {_gpu_hours(a.gpu_hours)}, "
            f"{_hours(a.wall_hours)} wall"
        )
    lines.append("")
    lines.append(
        f"study: {_si(p.tokens)} tokens, {_si(p.flops, 'FLOP')}, {_gpu_hours(p.gpu_hours)}, "
        f"{_hours(p.wall_hours)} wall on {c.gpus} x {c.gpu} (slots used {p.packing:.0%})"
    )
    lines.extend(f"warning: {w}" for w in p.warnings)
    return "\n".join(lines)
