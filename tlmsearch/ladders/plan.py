"""What a ladder costs before it runs: runs, tokens and training FLOPs per point, in GPU-hours on
a named GPU at an assumed MFU and, given a sustained FLOP rate, in CPU-hours (pure, no torch).

Per point: the learning-rate calibration's runs (its grid of rates on uniform times its
`lr_calibration_seeds` paired seeds, each `lr_calibration_fraction` of the point's length; a
grid widened beyond its edge adds that many runs a rate, not counted here), the point's uniform run, then every profile
(cosine, uniform, the ladder's profiles, its "best") times the seeds; with planned seeds
(`seeds` 0) the range from the pilot's seeds to `max_seeds`. Each profile's runs are priced at
its own model's FLOPs (a joint architecture held at equal parameters moves them), the
calibration's and the point's uniform runs at uniform's. FLOPs are those of
`models.counts` (matrix products, forward + backward); evaluation, start-up and data loading
are not counted, so real time is longer. A run's GPU time is at least `step_ms` per step (a
small model is bound by kernel launches, not FLOPs; `costs.plan` says where the default comes
from), so the GPU-hours of a point are the larger of its FLOP time and its steps' floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from tlmsearch.configs.identity import candidates
from tlmsearch.configs.lr_calibration import grid
from tlmsearch.configs.resolve import trial_shape
from tlmsearch.core.base import check_positive
from tlmsearch.costs.plan import GPUS, LINK_GB_S, STEP_FLOOR_MS, TRIAL_HOURS, gpus_within
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.ladders.points import PointSpec, point_size
from tlmsearch.models.counts import flops_per_token
from tlmsearch.profiles import ProfileSpec


@dataclass(frozen=True)
class PointCost:
    point: str
    non_embedding: int
    tokens_per_param: float
    steps: int
    compute: float  # FLOPs of one run of the point's uniform model (what the trend is fitted against)
    runs_low: int
    runs_high: int
    extra_runs: int = 0  # runs of uniform before the profiles' (calibration, the point's own)
    profile_compute: float = 0.0  # mean FLOPs of one run over the profiles (0: `compute`)
    n_layers: int = 0
    head_dim: int = 0
    params_total: int = 0  # of the point's uniform model: the gradients a data-parallel step all-reduces
    largest_compute: float = 0.0  # FLOPs of one run of the point's costliest profile (0: `compute`)

    def _flops(self, runs: int) -> float:
        """Uniform's runs at `compute`, each profile's at its own FLOPs (a joint architecture held
        at equal parameters moves them with its heads and block widths)."""
        return self.compute * self.extra_runs + (self.profile_compute or self.compute) * (runs - self.extra_runs)

    @property
    def flops_low(self) -> float:
        return self._flops(self.runs_low)

    @property
    def flops_high(self) -> float:
        return self._flops(self.runs_high)


def profile_texts(cfg: LadderConfig, spec: PointSpec | None = None) -> list[str]:
    """The profiles a point trains, each once as its verification trains them: the reference,
    cosine, uniform, the ladder's and its best, merged by the model each builds at the point
    (`configs.identity.candidates`: two spellings of one profile, or two profiles of one shape,
    are one); at the first point when `spec` is None."""
    spec = spec if spec is not None else cfg.specs[0]
    try:
        return [c.names[0] for c in candidates(cfg.point_config(spec), cfg.named_profiles)]
    except ConfigError as exc:
        raise ConfigError(f"point {spec.text}: {exc}") from None


def profile_count(cfg: LadderConfig, spec: PointSpec | None = None) -> int:
    """How many profiles a point trains (`profile_texts`)."""
    return len(profile_texts(cfg, spec))


def ladder_costs(cfg: LadderConfig) -> list[PointCost]:
    """Runs and FLOPs per point. Every profile is resolved on every point's budget, so a joint
    profile a point cannot build (a bowtie the budget cannot balance, a block-width profile on a
    family without block widths) is refused here, in one line, before anything trains."""
    low_seeds, high_seeds = (cfg.seeds, cfg.seeds) if cfg.seeds else (cfg.pilot_seeds, cfg.max_seeds)
    out = []
    for spec, pc in zip(cfg.specs, cfg.point_configs(), strict=True):
        size = point_size(pc)
        texts = profile_texts(cfg, spec)
        calibration = (
            len(grid(cfg.lr_calibration, cfg.train.lr)) * cfg.lr_calibration_seeds * cfg.lr_calibration_fraction
        )
        extra = 1 + int(round(calibration))
        per_token = [_flops_per_token(pc, spec.text, text) for text in texts]
        out.append(
            PointCost(
                spec.text,
                size.non_embedding,
                spec.tokens_per_param,
                size.steps,
                size.compute,
                extra + len(texts) * low_seeds,
                extra + len(texts) * high_seeds,
                n_layers=size.n_layers,
                head_dim=size.head_dim,
                params_total=size.params_total,
                largest_compute=size.tokens * max(per_token),
                extra_runs=extra,
                profile_compute=size.tokens * (per_token[0] if len(set(per_token)) == 1 else fmean(per_token)),
            )
        )
    return out


def _flops_per_token(point_cfg: Any, point: str, text: str) -> float:
    try:
        model = trial_shape(point_cfg, ProfileSpec.parse(text))[2]
    except ConfigError as exc:
        raise ConfigError(f"point {point}: {exc}") from None
    return flops_per_token(model)


def plan_ladder(
    cfg: LadderConfig,
    *,
    gpu: str = "h100-sxm",
    mfu: float = 0.4,
    cpu_flops: float | None = None,
    step_ms: float = STEP_FLOOR_MS,
    trial_hours: float = TRIAL_HOURS,
    link_gb_s: float = LINK_GB_S,
    paired_sd: float | None = None,
) -> dict[str, Any]:
    """The ladder's price as plain data (what `tlmsearch ladder plan --json` prints). For each point,
    `gpus_per_trial`: the fewest GPUs on which its costliest run finishes within `trial_hours`, trained
    data-parallel with its gradients all-reduced over `link_gb_s` (`costs.plan.gpus_within`, the price
    `tlmsearch plan` gives a trial of several GPUs; at most train.batch_size, one window a worker),
    with `trial_hours_on` those GPUs; None when no count does it (then the fewest hours any gives).
    With `paired_sd` (nats), `trend_power`: what its trend test can show (`ladders.power`)."""
    if gpu not in GPUS:
        raise ConfigError(f"gpu={gpu!r} is unknown; choose one of: {', '.join(GPUS)}")
    if not 0.0 < mfu <= 1.0:
        raise ConfigError(f"mfu={mfu} must lie in (0, 1]")
    if cpu_flops is not None and not (math.isfinite(cpu_flops) and cpu_flops > 0):
        raise ConfigError(
            f"cpu_flops={cpu_flops:g} must be a finite number of FLOP/s above 0 (leave it out: no CPU-hours)"
        )
    check_positive("step_ms", step_ms, allow_zero=True)
    if not (math.isfinite(trial_hours) and trial_hours > 0):
        raise ConfigError(f"trial_hours={trial_hours:g} must be a finite number of hours above 0")
    if not (math.isfinite(link_gb_s) and link_gb_s > 0):
        raise ConfigError(f"link_gb_s={link_gb_s:g} must be a finite number of GB/s above 0")
    cfg.check_arm()
    costs = ladder_costs(cfg)
    peak = GPUS[gpu].bf16_dense_flops * mfu

    def gpu_seconds(c: PointCost, runs: int, flops: float) -> float:
        return max(flops / peak, runs * c.steps * step_ms / 1000.0)

    low, high = sum(c.flops_low for c in costs), sum(c.flops_high for c in costs)
    gpu_low = sum(gpu_seconds(c, c.runs_low, c.flops_low) for c in costs) / 3600
    gpu_high = sum(gpu_seconds(c, c.runs_high, c.flops_high) for c in costs) / 3600
    computes = [c.compute for c in costs]

    def within(c: PointCost) -> tuple[int | None, float]:
        one = gpu_seconds(c, 1, c.largest_compute or c.compute)
        return gpus_within(one, c.steps, c.params_total, trial_hours, link_gb_s, cfg.train.batch_size)

    fits = [within(c) for c in costs]
    power = _power(cfg, costs, paired_sd) if paired_sd is not None else None
    return {
        "trend_power": power,
        "points": [
            {
                "point": c.point,
                "non_embedding": c.non_embedding,
                "n_layers": c.n_layers,
                "head_dim": c.head_dim,
                "tokens_per_param": c.tokens_per_param,
                "steps": c.steps,
                "flops_per_run": c.compute,
                "runs": [c.runs_low, c.runs_high],
                "flops": [c.flops_low, c.flops_high],
                "step_bound": gpu_seconds(c, c.runs_high, c.flops_high) > c.flops_high / peak,
                "params_total": c.params_total,
                "gpus_per_trial": gpus,
                "trial_hours_on": hours,
            }
            for c, (gpus, hours) in zip(costs, fits, strict=True)
        ],
        "trial_hours": trial_hours,
        "link_gb_s": link_gb_s,
        "arm": cfg.arm,
        "profiles": max(profile_count(cfg, spec) for spec in cfg.specs),
        "seeds": cfg.seeds or f"planned ({cfg.pilot_seeds}-{cfg.max_seeds})",
        "compute_span": max(computes) / min(computes),
        "flops": [low, high],
        "gpu": gpu,
        "mfu": mfu,
        "step_ms": step_ms,
        "gpu_hours": [gpu_low, gpu_high],
        "cpu_flops": cpu_flops or None,
        "cpu_hours": [low / cpu_flops / 3600, high / cpu_flops / 3600] if cpu_flops else None,
    }


def _power(cfg: LadderConfig, costs: list[PointCost], paired_sd: float) -> dict[str, Any]:
    """The trend test's power on this plan: its points (log10 FLOPs a run, or log2 layers for a
    depth arm), its deciding seeds (fixed, or the most the planner may give: max_seeds less the
    pilot's), `paired_sd` at every point; the paper's slope for a compute arm below 440M."""
    from tlmsearch.ladders.power import check_paired_sd, trend_power  # lazy: numpy's simulation, only with --paired-sd
    from tlmsearch.ladders.summary import paper_point  # lazy: the analysis (numpy), only with --paired-sd

    check_paired_sd(paired_sd)
    seeds = cfg.seeds or cfg.max_seeds - cfg.pilot_seeds
    if cfg.arm == "depth":
        return trend_power([math.log2(c.n_layers) for c in costs], [seeds] * len(costs), paired_sd, alpha=cfg.alpha)
    paper, top = paper_point(), max(c.compute for c in costs)
    slope = paper["log_gain"] / math.log10(paper["compute"] / top) if paper["compute"] > top else None
    x = [math.log10(c.compute) for c in costs]
    return trend_power(x, [seeds] * len(costs), paired_sd, paper_slope=slope, alpha=cfg.alpha)


def format_ladder_plan(p: dict[str, Any]) -> str:
    def span(pair: list[float], fmt: str) -> str:
        a, b = (format(x, fmt) for x in pair)
        return a if a == b else f"{a}-{b}"

    if p.get("arm") == "depth":
        layers = " / ".join(str(q["n_layers"]) for q in p["points"])
        params = [q["non_embedding"] for q in p["points"]]
        arm = (f"a depth arm: {layers} layers at {min(params):,}-{max(params):,} non-embedding parameters "
               f"({max(params) / min(params) - 1:.1%} apart), the gain fitted against log2 layers")  # fmt: skip
    else:
        q0 = p["points"][0]
        arm = (f"a compute arm at {q0['n_layers']} layers, head size {q0['head_dim']}: the gain fitted against "
               "log10 training FLOPs")  # fmt: skip
    lines = [
        f"ladder plan: {len(p['points'])} points over {p['compute_span']:.3g}x of compute, {p['profiles']} profiles, "
        f"seeds {p['seeds']}; {arm}"
    ]
    for q in p["points"]:
        lines.append(
            f"  {q['point']:<28} {q['non_embedding']:>14,} params  {q['n_layers']:>3} layers  "
            f"{q['tokens_per_param']:>6g} tok/param  "
            f"{q['steps']:>9,} steps  {q['flops_per_run']:.3g} FLOPs a run  x {span(q['runs'], 'd')} runs"
            + ("  (step-bound)" if q["step_bound"] else "")
        )
        if q["gpus_per_trial"] is not None:
            g = q["gpus_per_trial"]
            lines.append(f"  {'':<28} a run on {g} GPU{'s' * (g != 1)}: {q['trial_hours_on']:.3g} h")
        else:
            lines.append(f"  {'':<28} no GPU count finishes a run within {p['trial_hours']:g} h "
                         f"(at best {q['trial_hours_on']:.3g} h)")  # fmt: skip
    lines.append(
        f"total {span(p['flops'], '.3g')} FLOPs (matrix products; evaluation and start-up not counted): "
        f"{span(p['gpu_hours'], '.3g')} GPU-hours on {p['gpu']} at MFU {p['mfu']:g} and at least "
        f"{p['step_ms']:g} ms a step"
        + (f"; {span(p['cpu_hours'], '.3g')} CPU-hours at {p['cpu_flops']:.3g} FLOP/s" if p["cpu_hours"] else "")
    )
    lines.append(
        f"GPUs a trial: the fewest on which a point's costliest run ends within {p['trial_hours']:g} h "
        f"(--trial-hours), data-parallel, each step's fp32 gradient all-reduce (ring) at {p['link_gb_s']:g} GB/s "
        "(--link-gb-s) not overlapped, as tlmsearch plan prices it: --gpus-per-trial N for that point"
    )
    if p.get("trend_power"):
        from tlmsearch.ladders.power import power_text  # lazy: numpy's simulation module, only with --paired-sd

        lines.append(power_text(p["trend_power"], p.get("arm", "compute")))
    else:
        lines.append("add --paired-sd SD (nats; a pilot's spread) to see whether its trend test can show a trend")
    return "\n".join(lines)


__all__ = ["PointCost", "format_ladder_plan", "ladder_costs", "plan_ladder", "profile_count"]
