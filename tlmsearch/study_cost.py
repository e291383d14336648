"""What a study will cost, printed before it starts: trial counts and analytic training FLOPs
per architecture, and, once trials of an architecture have finished, measured seconds.

The FLOPs are the exact matrix-product FLOPs of `tlmsearch.models.counts` (forward + backward
for the training tokens, forward for the evaluations), for the uniform profile (every profile
of the budget has the same FLOPs). They are a lower bound on time, not a time: elementwise work
is not counted, and the recurrent memories of Titans and Hope-attention run far slower per
counted FLOP than attention on a CPU. Seconds are given only where they were measured (the
mean wall time of the architecture's finished trials in the study), never from an assumed
utilisation. The wall-time range of each architecture's phases is `tlmsearch.estimate`'s, from a
rate its caller measured (`tlmsearch.calibrate`: recorded runs of the shape, or steps timed now).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tlmsearch.estimate import Estimate as WallEstimate
from tlmsearch.models.counts import flops_per_token, forward_flops
from tlmsearch.profiles import ProfileSpec
from tlmsearch.resolve import trial_shape
from tlmsearch.rundir.records import read_records
from tlmsearch.study_config import StudyConfig


@dataclass(frozen=True)
class ArchCost:
    arch: str
    trials: tuple[int, int]  # (fewest, most) trials: search + verification (pilot..cap) + transfer
    flops_per_trial: float
    measured_s: float | None  # mean wall seconds of a finished trial of this arch, if any
    time: WallEstimate | str | None = None  # wall time of the arch's phases (`tlmsearch.estimate`), or why none

    @property
    def flops(self) -> tuple[float, float]:
        return self.trials[0] * self.flops_per_trial, self.trials[1] * self.flops_per_trial


@dataclass(frozen=True)
class Estimate:
    archs: tuple[ArchCost, ...]

    def text(self) -> str:
        lines = [
            "study cost estimate (analytic matmul FLOPs; trial seconds where measured in this study; wall time "
            "from rates recorded on this machine or a few steps timed now, trials at once as the study runs them):"
        ]
        for a in self.archs:
            lo, hi = a.flops
            line = (
                f"  {a.arch:<16} {a.trials[0]}-{a.trials[1]} trials x {a.flops_per_trial / 1e12:.3g} TFLOP "
                f"= {lo / 1e12:.3g}-{hi / 1e12:.3g} TFLOP"
            )
            if a.measured_s is not None:
                line += f"; measured {a.measured_s:.0f} s a trial -> {a.trials[0] * a.measured_s / 3600:.2f}-"
                line += f"{a.trials[1] * a.measured_s / 3600:.2f} h of trial time (one at a time)"
            if isinstance(a.time, WallEstimate):
                line += f"; estimate {a.time.text()} wall ({a.time.rate.text()})"
            elif a.time:
                line += f"; no time estimate ({a.time})"
            lines.append(line)
        lines.append(
            "  (a range: ASHA stops some search trials early, and planned seeds stop between the pilot and the cap;"
            " FLOPs understate the recurrent memories' cost on a CPU)"
        )
        return "\n".join(lines)


def trials_per_arch(cfg: StudyConfig) -> tuple[int, int]:
    """(fewest, most) full trials one architecture trains in the study."""
    profiles = cfg.top_k + 2 + len(cfg.controls)
    if cfg.seeds:
        verify = (profiles * cfg.seeds,) * 2
    else:
        verify = (profiles * (cfg.pilot_seeds + 2), profiles * cfg.max_seeds)
    transfer = (0, len(cfg.archs) * cfg.transfer_seeds) if len(cfg.archs) > 1 else (0, 0)
    return cfg.trials + verify[0] + transfer[0], cfg.trials + verify[1] + transfer[1]


def trial_flops(cfg: StudyConfig, arch: str) -> float:
    """Analytic FLOPs of one full-fidelity trial of `arch` (training plus evaluations)."""
    search = cfg.search_config(arch)
    _, _, model = trial_shape(search, ProfileSpec.parse("uniform"))
    t = cfg.train
    train_tokens = t.steps * t.batch_size * t.grad_accum * model.seq_len
    evals = t.steps // max(1, min(t.eval_interval, t.steps)) + 1
    return train_tokens * flops_per_token(model) + evals * t.eval_windows * forward_flops(model)


def measured_seconds(study_dir: str | Path | None, arch: str) -> float | None:
    if study_dir is None:
        return None
    times = [r.wall_s for r in read_records(Path(study_dir) / arch) if r.full_fidelity and r.wall_s > 0]
    return statistics.fmean(times) if times else None


def estimate(
    cfg: StudyConfig, study_dir: str | Path | None = None, times: Mapping[str, WallEstimate | str] | None = None
) -> Estimate:
    """The study's cost; `times`: each architecture's wall-time estimate (the caller times it)."""
    span = trials_per_arch(cfg)
    return Estimate(
        tuple(
            ArchCost(a, span, trial_flops(cfg, a), measured_seconds(study_dir, a), (times or {}).get(a))
            for a in cfg.archs
        )
    )
