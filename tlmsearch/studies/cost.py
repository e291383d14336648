"""What a study will cost, printed before it starts: trial counts, analytic training FLOPs and,
from a short calibration, hours, per architecture; and the time its remaining trials need (the
live view's ETA).

The FLOPs are the exact matrix-product FLOPs of `tlmsearch.configs.counts` (forward + backward
for the training tokens, forward for the evaluations), for the uniform profile (every profile
of the budget has the same FLOPs). They are a lower bound on time, not a time: elementwise work
is not counted, and the recurrent memories of Titans and Hope-attention run far slower per
counted FLOP than attention on a CPU.

Seconds come from measurements only, never from an assumed utilisation:

- `calibrate` times a few real training steps of each architecture's uniform profile at the
  study's trial shape, in the driver, before anything trains through Ray (seconds at small
  shapes). A shape whose calibration would take too long on this machine (predicted from its
  FLOPs at the measured matmul peak) is skipped with a note, and so is one that does not fit
  in memory. The result is kept in `<study>/cost.json` so a resumed study and `status` reuse it.
- Once trials of an architecture have finished, their mean wall time replaces the calibration
  (it includes what a calibration leaves out: start-up, evaluation, the load of the machine),
  and the ratio of measured to calibrated seconds rescales the calibration of the architectures
  with no finished trial yet (`load_scale`): a calibration taken under a heavy load would
  otherwise overstate them for the whole study.

A trial's seconds from a calibration are steps x seconds per step, plus its evaluations priced
at the same seconds per FLOP as a training step (their share of the trial's analytic FLOPs).
Hours are trial seconds / the trials that run at once (CPU slots), summed over architectures.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tlmsearch.configs.base import TrainConfig, deciding_train, trial_length_text, with_tokens_per_param
from tlmsearch.configs.counts import count_params, flops_per_token, forward_flops
from tlmsearch.configs.resolve import trial_shape
from tlmsearch.configs.study import StudyConfig
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.io import read_json_object, write_json
from tlmsearch.rundir.lr import calibration_rates
from tlmsearch.rundir.noise import noise_trial_seeds
from tlmsearch.rundir.records import read_records_polled

COST_FILE = "cost.json"
CALIBRATION_STEPS = 4  # timed steps after one warm-up step
CALIBRATION_BUDGET_S = 60.0  # skip an architecture whose calibration would take longer


@dataclass(frozen=True)
class ArchCost:
    arch: str
    trials: tuple[int, int]  # (fewest, most) trials: noise floor + search + verification (pilot..cap) + transfer
    flops_per_trial: float
    measured_s: float | None = None  # mean wall seconds of a finished trial of this arch, if any
    step_s: float | None = None  # calibrated seconds per training step, if calibrated
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


@dataclass(frozen=True)
class Estimate:
    archs: tuple[ArchCost, ...]
    slots: int = 1  # trials at once

    @property
    def hours(self) -> tuple[float, float] | None:
        """(fewest, most) wall hours of the whole study; None when an architecture has no seconds."""
        if any(a.trial_s is None for a in self.archs):
            return None
        lo = sum(a.trial_units[0] * (a.trial_s or 0.0) for a in self.archs) / self.slots / 3600
        hi = sum(a.trial_units[1] * (a.trial_s or 0.0) for a in self.archs) / self.slots / 3600
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
            elif a.step_s is not None:
                line += f"; calibrated {a.step_s * 1000:.0f} ms a step -> {a.calibrated_trial_s:.1f} s a trial"
                if a.load_scale != 1.0:
                    line += f" (x{a.load_scale:.2f}: measured / calibrated in this study's other architectures)"
            else:
                line += f"; no seconds ({a.note or 'not calibrated'})"
            if a.trial_s is not None:
                lo_s, hi_s = (n * a.trial_s / self.slots for n in a.trial_units)
                line += f" -> {_hours(lo_s)}-{_hours(hi_s)}"
            lines.append(line)
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
            "  (a range: planned seeds stop between the pilot and the cap, transfers happen only where the best"
            " is not cosine; ASHA's early stops make the search cheaper than counted; the machine's load moves it)"
        )
        return "\n".join(lines)


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 360 else f"{seconds / 60:.1f} min"


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
    search += len(calibration_rates(cfg.search_config(cfg.archs[0])))  # the learning-rate calibration's rates
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


def calibrate_arch(cfg: StudyConfig, arch: str, *, budget_s: float = CALIBRATION_BUDGET_S) -> dict[str, Any]:
    """{"step_s": seconds per training step} of `arch`'s uniform trial, timed over a few real
    steps after a warm-up one; or {"step_s": None, "note": why not}."""
    from tlmsearch.training.hardware import matmul_peak, resolve_device, thread_count  # lazy: heavy (torch)
    from tlmsearch.training.trainer import train  # lazy: heavy (numpy, torch)

    search = cfg.search_config(arch)
    _, _, model = trial_shape(search, ProfileSpec.parse("uniform"))
    # as a study's trial trains (`tuning.trainable.trial_train_config`): CPU, one thread per CPU asked
    threads = search.train.threads or max(1, int(search.cpus_per_trial))
    base = search.train.replace(seed=search.seed, threads=threads, device="cpu")
    steps = CALIBRATION_STEPS + 1
    tokens = base.batch_size * base.grad_accum * model.seq_len
    with thread_count(base.threads):
        peak = matmul_peak(resolve_device("cpu"), base.dtype, search.data.cache_path())
    predicted = steps * tokens * flops_per_token(model) / peak
    if predicted > budget_s:
        return {
            "step_s": None,
            "note": f"too big to calibrate here ({predicted:.0f} s predicted from FLOPs at the matmul peak)",
        }
    tcfg = base.replace(steps=steps, eval_interval=steps, eval_windows=1, warmup_steps=0, checkpoint_interval=0)
    stamps: list[float] = []
    try:
        train(model, tcfg, search.data, progress=lambda step: stamps.append(time.perf_counter()))
    except (UserError, MemoryError) as exc:
        return {"step_s": None, "note": f"does not train here ({str(exc).splitlines()[0][:120]})"}
    if len(stamps) < 2:
        return {"step_s": None, "note": "calibration ended early"}
    return {"step_s": (stamps[-1] - stamps[0]) / (len(stamps) - 1), "steps": len(stamps) - 1}


def calibrate(cfg: StudyConfig, study_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Each architecture's calibration, measured once and kept in `<study>/cost.json`."""
    path = Path(study_dir) / COST_FILE
    saved = read_calibration(study_dir)
    missing = [a for a in cfg.archs if a not in saved]
    if missing:
        saved.update({a: calibrate_arch(cfg, a) for a in missing})
        write_json(path, {"calibration": saved, "steps_timed": CALIBRATION_STEPS})
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
        if a.trial_s is None:
            return None
        lo, hi = lo + n[0] * a.trial_s, hi + n[1] * a.trial_s
    return lo / est.slots, hi / est.slots
