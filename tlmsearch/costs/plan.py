"""What a study costs before it runs: tokens, FLOPs, GPU-hours and wall time (pure, no torch).

A study has two phases that run one after the other, because verification needs the search's
result: a **search** of `trials` trials and its noise floor's extra seeds, then a
**verification** that re-trains `verify_profiles` profiles (by default verify's own: its top 5,
cosine, uniform and 3 controls) with `seeds` seeds each (by default verify's planned seeds at
their cap). Each phase's run length is derived as the commands derive it, from the same
defaults (`phase_steps`, `costs.phases`): a search trial at `tokens_per_param` (the search's
default, the screening length 5) unless `steps` or `tokens` is given, a verification run at the
deciding length (`verify_tokens_per_param`, 20) after a search given in tokens per parameter,
else at the search's length, unless `verify_steps` or `verify_tokens` is given. Every trial
trains `steps * batch_size * grad_accum * seq_len` tokens.

FLOPs come from the analytic `tlmsearch.models.flops_per_token` (training: forward and
backward), evaluated on the budget's uniform profile; every profile of a budget has the same
parameter count and the same dense FLOPs, so one figure serves every trial. The periodic
evaluations (`eval_windows` windows of `seq_len` tokens every `eval_interval` steps and at the
last step) are forward passes only, counted at one third of the training FLOPs per token.

GPU time is `FLOPs / (peak * mfu)`: `peak` is the GPU's dense BF16 tensor-core figure from its
vendor's datasheet, and `mfu` the share of it a trial sustains. With fractional GPUs per trial
(`gpus_per_trial` < 1, e.g. 0.25 packs four trials on one GPU) `mfu` is the utilisation of the
whole GPU summed over the trials packed on it; a trial on a fraction `g` of a GPU runs
`1 / g` times longer than alone. With `gpus_per_trial` > 1 (a whole number g) the trial trains
data-parallel on g workers of one GPU each (`--workers-per-trial g`), each keeping `mfu` on its
share of the batch, and every step adds the gradient all-reduce: a ring all-reduce of the fp32
gradients, each worker sending and receiving `2 (g - 1) / g x 4 x params` bytes over the slowest
link between the trial's GPUs at `link_gb_s` GB/s each way, counted whole (not overlapped with
the backward pass, latency left out): an upper bound on its cost where the bandwidth is right.
The default, 50 GB/s, is one 400 Gb/s InfiniBand NDR port, a link between nodes; NVLink 4
within an H100 or H200 node carries 450 GB/s each way (900 GB/s both ways, NVIDIA's datasheet),
so a trial inside one node is priced with `--link-gb-s 450`. The GPUs wait during the all-reduce
and are counted as held. Wall time counts waves: each phase
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

from tlmsearch.configs.presets import preset
from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.verify import DEFAULT_MAX_SEEDS as MAX_SEEDS
from tlmsearch.core.base import (
    ARCHITECTURE_NAMES,
    DECIDE_TOKENS_PER_PARAM,
    Config,
    TrainConfig,
    check_choice,
    check_positive,
    deciding_train,
    option,
    steps_for_tokens_per_param,
)
from tlmsearch.core.validate import check_seed_count
from tlmsearch.costs.phases import VERIFY_CONTROLS, VERIFY_TOP_K, noise_runs
from tlmsearch.errors import ConfigError
from tlmsearch.models.counts import count_params, flops_per_token

BYTES_PER_PARAM_STATIC = 16  # fp32 weights + fp32 gradients + two fp32 AdamW moments
EVAL_FLOPS_SHARE = 1.0 / 3.0  # a forward pass is ~1/3 of a training step's FLOPs per token
STEP_FLOOR_MS = 10.0  # GPU time a step costs at least (measured once on an H200, see the module docstring)
LINK_GB_S = 50.0  # one 400 Gb/s InfiniBand NDR port, each way (see the module docstring)
TRIAL_HOURS = 24.0  # ladder plan: the wall time a trial should end within (a day: a common job limit)
GRAD_BYTES = 4  # DDP all-reduces fp32 gradients (fp32 master weights under bf16 autocast)


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
_SEARCH = SearchConfig()  # a search's defaults: the plan's, so that `plan` prices what `search` and `verify` run


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlanConfig(Config):
    """A study to cost. Steps may be given as tokens instead (`tokens` > 0 overrides `steps`)."""

    preset: str = option("170m", "model shape preset, e.g. 170m, 340m, 760m, 1.3b")
    archs: tuple[str, ...] = ("transformer",)  # flag: --arch a,b (comma-separated)
    model: dict[str, int] = dataclasses.field(default_factory=dict)  # shape overrides (SHAPE_FIELDS): --layers ...
    base_width: int = option(0, "MLP width per layer; 0 = the preset's")
    tie_embeddings: bool = True  # flag: --untied
    trials: int = option(_SEARCH.trials, "search trials, baselines included, costed at full length; 0 = no search")
    noise_seeds: int = option(_SEARCH.noise_seeds, "the search's noise floor: uniform trained with this many seeds")
    steps: int = option(0, "optimizer steps of a search trial; 0 = from --tokens or --tokens-per-param")
    tokens: int = option(0, "tokens of a search trial instead of --steps, not with it (e.g. 2e8); 0 = use --steps")
    tokens_per_param: float = option(
        _SEARCH.train.tokens_per_param,
        "a search trial's length in tokens per NON-EMBEDDING parameter, each architecture's steps from its own "
        "count, when neither --steps nor --tokens is given (the search's default: the screening length)",
    )
    verify_tokens_per_param: float = option(
        DECIDE_TOKENS_PER_PARAM,
        "a verification run's length in tokens per parameter after a search given in tokens per parameter "
        "(at least the search's; verify's default: the deciding length)",
    )
    verify_profiles: int = option(
        VERIFY_TOP_K + 2 + VERIFY_CONTROLS, f"profiles re-trained with seeds (verify's: its top {VERIFY_TOP_K}, "
        f"cosine, uniform and {VERIFY_CONTROLS} controls); 0 = no verification"
    )  # fmt: skip
    seeds: int = option(0, f"seeds per verified profile; 0 = verify's planned seeds, priced at their cap ({MAX_SEEDS})")
    verify_steps: int = option(0, "steps of a verification run; 0 = the deciding length (or the search's steps)")
    verify_tokens: int = option(0, "tokens of a verification run instead of --verify-steps, not with it")
    batch_size: int = option(_TRAIN.batch_size, "sequences per micro-batch")
    grad_accum: int = option(_TRAIN.grad_accum, "micro-batches per step")
    eval_interval: int = option(_TRAIN.eval_interval, "steps between evaluations")
    eval_windows: int = option(_TRAIN.eval_windows, "validation windows per evaluation")
    gpu: str = option("h100-sxm", "GPU model", choices=tuple(GPUS))
    mfu: float = option(0.4, "share of the dense BF16 peak a trial sustains")
    gpus: int = option(8, "GPUs in the cluster")
    gpus_per_trial: float = option(1.0, "GPUs per trial; 0.25 packs four trials per GPU; above 1 a whole number")
    link_gb_s: float = option(
        LINK_GB_S,
        "GB/s each way of the slowest link between a trial's GPUs when gpus_per_trial > 1 (its gradient "
        "all-reduce; 50 = a 400 Gb/s InfiniBand port between nodes, 450 = NVLink within an H100/H200 node)",
    )
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
        for name in ("batch_size", "grad_accum", "eval_interval", "gpus"):
            check_positive(name, getattr(self, name))
        zero_allowed = ("base_width", "trials", "steps", "tokens", "verify_profiles", "verify_steps", "verify_tokens")
        for name in (*zero_allowed, "tokens_per_param", "verify_tokens_per_param", "noise_seeds"):
            check_positive(name, getattr(self, name), allow_zero=True)
        if not (self.steps or self.tokens or self.tokens_per_param):
            raise ConfigError("steps, tokens and tokens_per_param are all 0: a search trial has no length")
        if self.seeds:
            check_seed_count("seeds", self.seeds)  # verify's and the study's rule: at least 2 seeds
        check_positive("eval_windows", self.eval_windows, allow_zero=True)
        if not 0 < self.mfu <= 1:
            raise ConfigError(f"mfu={self.mfu!r} must lie in (0, 1] (a share of the GPU's peak, e.g. 0.4)")
        check_positive("gpus_per_trial", self.gpus_per_trial)
        check_positive("step_ms", self.step_ms, allow_zero=True)
        check_positive("link_gb_s", self.link_gb_s)
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
    comm_hours_per_run: float  # of `run_hours`: the gradient all-reduces of a run on several GPUs
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


def phase_steps(cfg: PlanConfig, non_embedding: int, tokens_per_step: int) -> tuple[int, int]:
    """(search, verify) steps of a run, as the commands derive them: a search trial from --steps,
    --tokens or its tokens per parameter (`configs.resolve.resolve_trial_length`'s rule); a
    verification run from --verify-steps or --verify-tokens, else at the deciding length after a
    search given in tokens per parameter (`core.base.deciding_train`, `configs.verify.retrain_config`'s
    rule), else the search's steps."""
    if cfg.tokens or cfg.steps:
        steps = steps_for(cfg.tokens, tokens_per_step) if cfg.tokens else cfg.steps
        per_param = 0.0
    else:
        per_param = cfg.tokens_per_param
        steps = steps_for_tokens_per_param(per_param, non_embedding, tokens_per_step)
    if cfg.verify_tokens or cfg.verify_steps:
        return steps, steps_for(cfg.verify_tokens, tokens_per_step) if cfg.verify_tokens else cfg.verify_steps
    if per_param:
        deciding = deciding_train(TrainConfig(tokens_per_param=per_param), cfg.verify_tokens_per_param)
        return steps, steps_for_tokens_per_param(deciding.tokens_per_param, non_embedding, tokens_per_step)
    return steps, steps


def search_runs_of(cfg: PlanConfig) -> int:
    """A search's runs: its trials and the noise floor's extra seeds of uniform (`costs.phases.noise_runs`)."""
    if not cfg.trials:
        return 0
    return cfg.trials + noise_runs(_SEARCH.replace(trials=cfg.trials, noise_seeds=cfg.noise_seeds))


def verify_runs_of(cfg: PlanConfig) -> int:
    """A verification's runs: its profiles (verify's: `costs.phases.verify_runs` at the most) x
    its seeds (0: verify's planned seeds, priced at their cap)."""
    return cfg.verify_profiles * (cfg.seeds or MAX_SEEDS)


def allreduce_seconds(params: int, workers: int, link_gb_s: float) -> float:
    """Seconds one step's gradient all-reduce takes over `workers` (ring, fp32, not overlapped;
    the module docstring): 0 for one worker."""
    if workers <= 1:
        return 0.0
    return 2.0 * (workers - 1) / workers * GRAD_BYTES * params / (link_gb_s * 1e9)


def run_seconds_on(gpu_seconds: float, steps: int, params: int, gpus: int, link_gb_s: float) -> float:
    """Wall seconds of one run whose GPU time alone is `gpu_seconds`, trained data-parallel on
    `gpus` GPUs: each takes its share, and every step adds the ring all-reduce of the gradients
    (`allreduce_seconds`, not overlapped)."""
    return gpu_seconds / gpus + steps * allreduce_seconds(params, gpus, link_gb_s)


def gpus_within(
    gpu_seconds: float, steps: int, params: int, hours: float, link_gb_s: float, most: int
) -> tuple[int | None, float]:
    """The fewest whole GPUs (1 to `most`) on which one run finishes within `hours`
    (`run_seconds_on`), and its hours on them; (None, the fewest hours any count up to `most`
    gives) when none does: the all-reduce alone, `steps` x its time, may exceed the limit."""
    best = (1, run_seconds_on(gpu_seconds, steps, params, 1, link_gb_s))
    for g in range(1, most + 1):
        seconds = run_seconds_on(gpu_seconds, steps, params, g, link_gb_s)
        if seconds <= hours * 3600.0:
            return g, seconds / 3600.0
        best = min(best, (g, seconds), key=lambda b: b[1])
    return None, best[1] / 3600.0


def _phase(
    cfg: PlanConfig, name: str, runs: int, steps: int, seq_len: int, fpt: float, slots: int, params: int = 0
) -> Phase:
    tokens_per_run = steps * cfg.batch_size * cfg.grad_accum * seq_len
    evals = steps // cfg.eval_interval + (steps % cfg.eval_interval != 0)  # every interval and the last step
    eval_tokens = evals * cfg.eval_windows * seq_len
    flops_per_run = tokens_per_run * fpt + eval_tokens * fpt * EVAL_FLOPS_SHARE
    flop_seconds = flops_per_run / (GPUS[cfg.gpu].bf16_dense_flops * cfg.mfu)
    gpu_seconds = max(flop_seconds, steps * cfg.step_ms / 1000.0)
    workers = int(cfg.gpus_per_trial) if cfg.gpus_per_trial > 1 else 1
    comm_seconds = steps * allreduce_seconds(params, workers, cfg.link_gb_s)
    run_hours = (gpu_seconds / cfg.gpus_per_trial + comm_seconds) / 3600.0  # run_seconds_on for a whole count
    held_seconds = gpu_seconds + comm_seconds * workers  # GPU time held: the waits of the all-reduce too
    waves = -(-runs // slots)
    return Phase(
        name=name,
        runs=runs,
        steps=steps,
        tokens_per_run=tokens_per_run,
        flops_per_run=flops_per_run,
        gpu_hours_per_run=held_seconds / 3600.0,
        step_bound=gpu_seconds > flop_seconds,
        run_hours=run_hours,
        comm_hours_per_run=comm_seconds / 3600.0,
        waves=waves,
        wall_hours=waves * run_hours,
        tokens=runs * tokens_per_run,
        flops=runs * flops_per_run,
        gpu_hours=runs * held_seconds / 3600.0,
    )


def plan(cfg: PlanConfig) -> Plan:
    """Cost the study `cfg` describes (see the module docstring for every assumption)."""
    gpu = GPUS[cfg.gpu]
    slots = slots_for(cfg.gpus, cfg.gpus_per_trial)
    warnings: list[str] = []
    arch_plans = []
    shape: Any = None
    for arch in cfg.archs:
        shape, model = model_of(cfg, arch)
        tokens_per_step = cfg.batch_size * cfg.grad_accum * shape.seq_len
        counts = count_params(model)
        steps, vsteps = phase_steps(cfg, counts.non_embedding, tokens_per_step)
        fpt = flops_per_token(model)
        phases = tuple(
            _phase(cfg, name, runs, n, shape.seq_len, fpt, slots, counts.total)
            for name, runs, n in (("search", search_runs_of(cfg), steps), ("verify", verify_runs_of(cfg), vsteps))
            if runs
        )
        if cfg.gpus_per_trial > 1:
            step_s = allreduce_seconds(counts.total, int(cfg.gpus_per_trial), cfg.link_gb_s)
            warnings.append(
                f"{arch}: each trial trains data-parallel on {cfg.gpus_per_trial:g} GPUs (--workers-per-trial "
                f"{cfg.gpus_per_trial:g}); its gradient all-reduce ({counts.total:,} fp32 gradients, ring) is priced "
                f"at {cfg.link_gb_s:g} GB/s (--link-gb-s), not overlapped: {step_s * 1e3:.3g} ms a step"
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
