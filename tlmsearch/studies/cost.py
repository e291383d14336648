"""What a study will cost, printed before it starts: trial counts, analytic training FLOPs and,
from a short calibration, hours, per architecture; and the time its remaining trials need (the
live view's ETA).

The FLOPs are the exact matrix-product FLOPs of `tlmsearch.models.counts` (forward + backward
for the training tokens, forward for the evaluations), for the uniform profile (every profile
of the budget has the same FLOPs). They are a lower bound on time, not a time: elementwise work
is not counted, and the recurrent memories of Titans and Hope-attention run far slower per
counted FLOP than attention on a CPU.

Seconds come from measured figures, and nothing trains to price a study (its dry run answers in
seconds):

- `price_arch` prices a training step of each architecture's uniform profile at the study's
  trial shape: a rate recorded by earlier runs of that shape on this machine, else its FLOPs over
  this machine's measured matmul peak at the share of it such a step was measured to sustain
  (`tlmsearch.costs.price`: a range, a point at a measured shape), slowed for the trials that
  share the cores (`costs.estimate.load_slowdown`). The result is kept in `<study>/cost.json` so
  a resumed study and `status` reuse it.
- Once trials of an architecture have finished, their mean wall time replaces the price
  (it includes what a price leaves out: start-up, evaluation, the load of the machine),
  and the ratio of measured to priced seconds rescales the price of the architectures
  with no finished trial yet (`load_scale`).

A trial's seconds from a price are steps x seconds per step, plus its evaluations priced
at the same seconds per FLOP as a training step (their share of the trial's analytic FLOPs).
Hours are trial seconds / the trials that run at once (CPU slots), summed over architectures.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tlmsearch.configs.resolve import trial_shape
from tlmsearch.configs.study import StudyConfig
from tlmsearch.core.base import TrainConfig, deciding_train, trial_length_text, with_tokens_per_param
from tlmsearch.costs.calibrate import rate_or_reason
from tlmsearch.costs.estimate import duration
from tlmsearch.costs.phases import lr_runs
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.models.counts import count_params, flops_per_token, forward_flops
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.io import read_json_object, write_json
from tlmsearch.rundir.noise import noise_trial_seeds
from tlmsearch.rundir.records import read_records_polled

COST_FILE = "cost.json"


@dataclass(frozen=True)
class ArchCost:
    arch: str
    trials: tuple[int, int]  # (fewest, most) trials: noise floor + search + verification (pilot..cap) + transfer
    flops_per_trial: float
    measured_s: float | None = None  # mean wall seconds of a finished trial of this arch, if any
    step_s: float | None = None  # priced seconds per training step (the fast end), if priced
    step_s_high: float | None = None  # ... and the slow end (None: step_s)
    note: str = ""  # why there is no calibration
    steps_equivalent: float = 0.0  # a trial's steps plus its evaluations, in training steps
    load_scale: float = 1.0  # measured / calibrated seconds of the architectures that have both
    length: str = ""  # how a trial length in tokens per parameter became this arch's steps ("" for --steps)
    decide_ratio: float = 1.0  # a verification or transfer trial's length in search trials (`phase_weights`)
    units: tuple[float, float] | None = None  # `trials` in search trials (None: every trial is one)

    @property
    def trial_units(self) -> tuple[float, float]:
        """(fewest, most) trials counted in search trials: a verification trial at the deciding
        length counts `decide_ratio` of them."""
        return self.units if self.units is not None else (float(self.trials[0]), float(self.trials[1]))

    @property
    def flops(self) -> tuple[float, float]:
        return self.trial_units[0] * self.flops_per_trial, self.trial_units[1] * self.flops_per_trial

    @property
    def trial_s(self) -> float | None:
        """Seconds one trial takes: measured in this study, else calibrated, else unknown."""
        return self.measured_s if self.measured_s is not None else self.calibrated_trial_s

    @property
    def calibrated_trial_s(self) -> float | None:
        return None if self.step_s is None else self.step_s * self.steps_equivalent * self.load_scale

    @property
    def trial_s_range(self) -> tuple[float, float] | None:
        """(fast, slow) seconds of one trial: measured in this study (a point), else priced."""
        if self.measured_s is not None:
            return self.measured_s, self.measured_s
        if self.step_s is None:
            return None
        high = self.step_s_high if self.step_s_high is not None else self.step_s
        return self.step_s * self.steps_equivalent * self.load_scale, high * self.steps_equivalent * self.load_scale


@dataclass(frozen=True)
class Estimate:
    archs: tuple[ArchCost, ...]
    slots: int = 1  # trials at once

    @property
    def hours(self) -> tuple[float, float] | None:
        """(fewest, most) wall hours of the whole study; None when an architecture has no seconds."""
        spans = [a.trial_s_range for a in self.archs]
        if any(s is None for s in spans):
            return None
        lo = sum(a.trial_units[0] * s[0] for a, s in zip(self.archs, spans, strict=True) if s) / self.slots / 3600
        hi = sum(a.trial_units[1] * s[1] for a, s in zip(self.archs, spans, strict=True) if s) / self.slots / 3600
        return lo, hi

    def text(self) -> str:
        lines = [f"study cost estimate ({self.slots} trial{'s' * (self.slots > 1)} at once):"]
        for a in self.archs:
            lo, hi = a.flops
            line = (
                f"  {a.arch:<16} {a.trials[0]}-{a.trials[1]} trials x {a.flops_per_trial / 1e12:.3g} TFLOP "
                f"= {lo / 1e12:.3g}-{hi / 1e12:.3g} TFLOP"
            )
            if a.measured_s is not None:
                line += f"; measured {a.measured_s:.1f} s a trial in this study"
            elif a.step_s is not None and (span := a.trial_s_range):
                line += f"; priced {_ms(a.step_s, a.step_s_high)} a step -> {_secs(*span)} a trial"
                if a.load_scale != 1.0:
                    line += f" (x{a.load_scale:.2f}: measured / priced in this study's other architectures)"
            else:
                line += f"; no seconds ({a.note or 'not priced'})"
            if span := a.trial_s_range:
                lo_s, hi_s = a.trial_units[0] * span[0] / self.slots, a.trial_units[1] * span[1] / self.slots
                line += f" -> {_hours(lo_s)}-{_hours(hi_s)}"
            lines.append(line)
            if a.measured_s is None and a.note and a.step_s is not None:
                lines.append(f"  {'':<16} a step: {a.note}")
            if a.length:
                lines.append(f"  {'':<16} a trial: {a.length}")
            if a.decide_ratio != 1.0:
                lines.append(
                    f"  {'':<16} verification and transfer trials train {a.decide_ratio:.3g}x as long (the deciding "
                    f"length): {a.trial_units[0]:.3g}-{a.trial_units[1]:.3g} trials counted in search trials"
                )
        total = self.hours
        lines.append(
            f"  total: {_hours(total[0] * 3600)}-{_hours(total[1] * 3600)} on this machine"
            if total
            else "  total: unknown in hours (an architecture has no seconds; FLOPs only)"
        )
        lines.append(
            "  (how the range is formed: the low end is the fewest trials (planned seeds stop at the pilot, no"
            " transfer) at the fast end of each step's price; the high end every profile at the seed cap and"
            " every transfer at the slow end; search trials count in full: ASHA's early stops only lower it)"
        )
        return "\n".join(lines)


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 360 else f"{seconds / 60:.1f} min"


def _ms(low: float, high: float | None) -> str:
    """`500 ms`, `2.4-4.8 s`: a step's price."""
    high = low if high is None else high
    if high >= 1.0:
        return f"{low:.2g} s" if f"{low:.2g}" == f"{high:.2g}" else f"{low:.2g}-{high:.2g} s"
    return (
        f"{low * 1000:.0f} ms" if round(high * 1000) == round(low * 1000) else f"{low * 1000:.0f}-{high * 1000:.0f} ms"
    )


def _secs(low: float, high: float) -> str:
    """`12.5 s`, `1h20m-2h41m`: a trial's price."""
    if high < 60:
        return f"{low:.1f} s" if round(low, 1) == round(high, 1) else f"{low:.1f}-{high:.1f} s"
    return duration(low) if duration(low) == duration(high) else f"{duration(low)}-{duration(high)}"


# ----------------------------------------------------------------------------- counts


def phase_trials(cfg: StudyConfig) -> dict[str, tuple[int, int]]:
    """(fewest, most) full trials of each phase of one architecture: search (its noise trials and
    its learning-rate calibration's trials included, the latter counted as full trials), verify, transfer."""
    profiles = cfg.top_k + 2 + len(cfg.controls) + (1 if cfg.random_control else 0)  # + random-best
    if cfg.seeds:
        verify = (profiles * cfg.seeds,) * 2
    else:
        verify = (profiles * (cfg.pilot_seeds + 2), profiles * cfg.max_seeds)
    if cfg.rate_check:  # the verification may decide on as few as 2 fresh seeds
        verify = (
            verify[0] + rate_check_trials(cfg.rate_check, cfg.rate_check),
            verify[1] + rate_check_trials(cfg.rate_check, cfg.seeds or 2),
        )
    transfer = (0, len(cfg.archs) * cfg.transfer_seeds) if len(cfg.archs) > 1 else (0, 0)
    search = cfg.search.trials + len(noise_trial_seeds(cfg.search_config(cfg.archs[0])))  # the floor's extra seeds
    search += lr_runs(cfg.search_config(cfg.archs[0]))  # the calibration's rates x seeds, in search trials
    companion = cfg.random_config(cfg.archs[0]) if cfg.random_control else None
    search += companion.trials if companion is not None else 0  # the random-search control
    return {"search": (search, search), "verify": verify, "transfer": transfer}


def rate_check_trials(rate_check: int, fresh_seeds: int) -> int:
    """Runs of a learning-rate check on `rate_check` seeds: cosine and the candidate at half and
    twice the rate, and at the base rate on the seeds the verification's `fresh_seeds` lack."""
    return 4 * rate_check + 2 * max(0, rate_check - fresh_seeds) if rate_check else 0


def trials_per_arch(cfg: StudyConfig) -> tuple[int, int]:
    """(fewest, most) full trials one architecture trains in the study (its noise trials included)."""
    spans = phase_trials(cfg).values()
    return sum(s[0] for s in spans), sum(s[1] for s in spans)


def phase_weights(cfg: StudyConfig, arch: str) -> dict[str, float]:
    """Each phase's trial length in search trials (steps plus evaluations, by FLOPs): 1 for the
    search; verification and transfer train the deciding length (`config.deciding_train`: 20
    tokens per parameter after searches that screen at 5, so 4x as long; 1 when the study gives
    its steps or already decides)."""
    ratio = steps_equivalent(cfg, arch, deciding=True) / max(steps_equivalent(cfg, arch), 1e-12)
    return {"search": 1.0, "verify": ratio, "transfer": ratio}


def weighted_trials(spans: Mapping[str, tuple[float, float]], weights: Mapping[str, float]) -> tuple[float, float]:
    """(fewest, most) trials of `spans` (phase -> (fewest, most)) counted in search trials (pure)."""
    return (
        sum(lo * weights.get(p, 1.0) for p, (lo, _) in spans.items()),
        sum(hi * weights.get(p, 1.0) for p, (_, hi) in spans.items()),
    )


def trial_flops(cfg: StudyConfig, arch: str) -> float:
    """Analytic FLOPs of one full-fidelity trial of `arch` (training plus evaluations)."""
    train, evals = _flops_split(cfg, arch)
    return train + evals


def _flops_split(cfg: StudyConfig, arch: str, deciding: bool = False) -> tuple[float, float]:
    """(training, evaluation) FLOPs of one full trial of `arch` (of a search, or `deciding`)."""
    model, t = _trial(cfg, arch, deciding)
    train_tokens = t.steps * t.batch_size * t.grad_accum * model.seq_len
    evals = t.steps // max(1, min(t.eval_interval, t.steps)) + 1
    return train_tokens * flops_per_token(model), evals * t.eval_windows * forward_flops(model)


def _trial(cfg: StudyConfig, arch: str, deciding: bool = False) -> tuple[Any, TrainConfig]:
    """The uniform model of `arch`'s search and its TrainConfig (a search trial's, or the
    verification's when `deciding`), its steps derived from a trial length in tokens per
    parameter (each architecture has its own non-embedding count)."""
    _, _, model = trial_shape(cfg.search_config(arch), ProfileSpec.parse("uniform"))
    train = deciding_train(cfg.search.train, cfg.verify_tokens_per_param) if deciding else cfg.search.train
    return model, with_tokens_per_param(train, count_params(model).non_embedding, model.seq_len)


def trial_length(cfg: StudyConfig, arch: str) -> str:
    """'2 tokens per parameter of 20.6K non-embedding parameters = 41.3K tokens = 81 steps of 512
    tokens' for `arch`'s trials ("" when the study gives its steps directly)."""
    if not cfg.search.train.tokens_per_param:
        return ""
    model, train = _trial(cfg, arch)
    tokens = train.tokens_per_step * model.seq_len
    return trial_length_text(train.tokens_per_param, count_params(model).non_embedding, tokens, train.steps)


def steps_equivalent(cfg: StudyConfig, arch: str, deciding: bool = False) -> float:
    """A trial's training steps plus its evaluations, counted in training steps by FLOPs (a
    search trial's, or a verification trial's when `deciding`)."""
    train, evals = _flops_split(cfg, arch, deciding)
    steps = _trial(cfg, arch, deciding)[1].steps
    return steps * (1.0 + evals / train) if train else float(steps)


def measured_seconds(study_dir: str | Path | None, arch: str, steps: int = 0) -> float | None:
    """Mean wall seconds of `arch`'s finished full trials, each scaled to `steps` steps (a search
    trial's: verification trials train longer); unscaled when `steps` is 0."""
    if study_dir is None:
        return None
    times = [
        r.wall_s * (steps / r.max_steps if steps and r.max_steps else 1.0)
        for r in read_records_polled(Path(study_dir) / arch)
        if r.full_fidelity and r.wall_s > 0
    ]
    return statistics.fmean(times) if times else None


def slots(cfg: StudyConfig) -> int:
    """Trials that run at once on this machine."""
    from tlmsearch.training.hardware import cpu_count  # lazy: heavy (torch)

    n = max(1, int(cpu_count() // cfg.search.cpus_per_trial))
    return min(n, cfg.search.max_concurrent) if cfg.search.max_concurrent else n


# ----------------------------------------------------------------------------- calibration


def price_arch(cfg: StudyConfig, arch: str, n_slots: int | None = None) -> dict[str, Any]:
    """{"step_s": fast, "step_s_high": slow seconds per training step, "note": where the figures
    come from} of `arch`'s uniform trial, trained nothing: a rate recorded for the shape, else its
    FLOPs priced by `costs.price` (`costs.calibrate.rate_or_reason`), for `n_slots` trials at once
    (default: the study's); or {"step_s": None, "note": why not}."""
    search = cfg.search_config(arch)
    _, _, model = trial_shape(search, ProfileSpec.parse("uniform"))
    # as a study's trial trains (`tuning.trainable.trial_train_config`): one thread per CPU asked
    threads = search.train.threads or max(1, int(search.cpus_per_trial))
    base = search.train.replace(seed=search.seed, threads=threads, device=study_device(cfg))
    # a bare training step: the trial's evaluations are counted apart (`steps_equivalent`)
    bare = base.replace(eval_interval=base.steps, eval_windows=1, warmup_steps=0, checkpoint_interval=0)
    try:
        # no load: a study runs for hours, through whatever else the machine runs meanwhile; its own
        # trials sharing the cores (`slots`) are counted
        rate = rate_or_reason(model, bare, search.data, slots=n_slots or slots(cfg), load=0.0)
    except (UserError, MemoryError) as exc:
        return {"step_s": None, "note": f"not priced ({str(exc).splitlines()[0][:120]})"}
    if isinstance(rate, str):
        return {"step_s": None, "note": rate}
    return {"step_s": rate.s_per_step_low, "step_s_high": rate.s_per_step_high, "note": rate.source}


def study_device(cfg: StudyConfig) -> str:
    """Where a study's trials train: "cuda" with a share of a GPU per trial, else "cpu"."""
    return "cuda" if cfg.search.gpu_share > 0 else "cpu"


def calibrate(cfg: StudyConfig, study_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Each architecture's price per step (`price_arch`), worked out once and kept in `<study>/cost.json`."""
    path = Path(study_dir) / COST_FILE
    saved = read_calibration(study_dir)
    missing = [a for a in cfg.archs if a not in saved]
    if missing:
        saved.update({a: price_arch(cfg, a) for a in missing})
        write_json(path, {"calibration": saved})
    return saved


def read_calibration(study_dir: str | Path | None) -> dict[str, dict[str, Any]]:
    if study_dir is None:
        return {}
    try:
        data = read_json_object(Path(study_dir) / COST_FILE) or {}
    except ConfigError:
        return {}  # a damaged cache: the study calibrates again (seconds) and rewrites it
    return dict(data.get("calibration", {}))


# ----------------------------------------------------------------------------- estimates


def estimate(
    cfg: StudyConfig,
    study_dir: str | Path | None = None,
    calibration: Mapping[str, Mapping[str, Any]] | None = None,
    n_slots: int | None = None,
) -> Estimate:
    """The study's cost; `calibration` defaults to what `<study>/cost.json` holds."""
    calibration = read_calibration(study_dir) if calibration is None else calibration
    span, spans = trials_per_arch(cfg), phase_trials(cfg)
    archs = []
    for a in cfg.archs:
        cal, weights = calibration.get(a, {}), phase_weights(cfg, a)
        archs.append(
            ArchCost(
                a,
                span,
                trial_flops(cfg, a),
                measured_seconds(study_dir, a, _trial(cfg, a)[1].steps),
                step_s=cal.get("step_s"),
                step_s_high=cal.get("step_s_high"),
                note=str(cal.get("note", "")),
                steps_equivalent=steps_equivalent(cfg, a),
                length=trial_length(cfg, a),
                decide_ratio=weights["verify"],
                units=weighted_trials(spans, weights),
            )
        )
    scale = load_scale(archs)
    archs = [replace(a, load_scale=scale) if a.measured_s is None else a for a in archs]
    return Estimate(tuple(archs), n_slots or slots(cfg))


def load_scale(archs: Sequence[ArchCost]) -> float:
    """How far the calibration was off, as the geometric mean of measured / calibrated trial
    seconds over the architectures that have both (1 when none has).

    A calibration times a few steps under one moment's load, once per study; measured trials
    carry the load the study really meets. Their ratio rescales the calibrations of the
    architectures not measured yet, so the time left follows the machine the study runs on.
    """
    ratios = [
        a.measured_s / a.calibrated_trial_s
        for a in archs
        if a.measured_s is not None and a.calibrated_trial_s  # a.load_scale is still 1 here
    ]
    return math.exp(statistics.fmean(math.log(r) for r in ratios)) if ratios else 1.0


def remaining_seconds(est: Estimate, left: Mapping[str, tuple[float, float]]) -> tuple[float, float] | None:
    """(fewest, most) wall seconds the trials still `left` per architecture need (None: unknown)."""
    lo = hi = 0.0
    for a in est.archs:
        n = left.get(a.arch, (0, 0))
        if n == (0, 0):
            continue
        span = a.trial_s_range
        if span is None:
            return None
        lo, hi = lo + n[0] * span[0], hi + n[1] * span[1]
    return lo / est.slots, hi / est.slots
