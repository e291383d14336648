"""A verification extended after its last look: the stages of its history and their boundaries
(pure numpy/scipy).

A group-sequential design (`sequential.Design`) spends its alpha by its last look: at that look
the cumulative spending function reaches alpha. Testing the same candidates again on more seeds
(re-planning the looks, or a fixed plan with more seeds) at the full level once more spends it
twice: the probability of a false claim over the whole history exceeds alpha
(`bench/bench_extension.py` measures how far). `verify` therefore treats an
extension as a new **stage** of one design whose error is accounted for over the whole history:

- the earlier stages keep the boundaries they were decided with (their looks, their levels, the
  t calibration of their own design), so every decision they made stands;
- the new stage's looks (seeds beyond the last look so far, the same seeds continued) spend only
  alpha the history has not spent: the history's new level A must exceed the alpha spent, and
  the new looks spend A - alpha_spent with the stage's own spending function over its own
  information fraction u = (n - N_prev) / (N_new - N_prev);
- for Holm's level alpha / r the same holds at A / r: stage s's row r spends
  (alpha_s - alpha_{s-1}) / r more on top of the earlier stages' row r, so the history is one
  weighted-Bonferroni group-sequential test per level and Holm's step-down over the looks of the
  whole history is its closed test, exactly as within one design.

The new boundaries are computed as in `sequential_bounds`: z boundaries by integrating the score
(Brownian motion) through the earlier looks with their boundaries fixed (the z values with the
same tail probability as their t boundaries) and solving each new look for its increment, then
t boundaries at n - 1 degrees of freedom; with `calibrate` the stage's nominal increment is set by
simulated null t paths over the whole history so that the history crosses row r with
probability A / r (the same correction `calibrated_levels` makes within one design). A history
at level A therefore makes a false claim with probability at most A, whatever the stages:
measured in `bench/bench_extension.py` against known truths.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from tlmsearch.analysis.sequential_bounds import (
    CALIBRATION_CROSSINGS,
    CALIBRATION_MAX_PATHS,
    CALIBRATION_PATHS,
    CALIBRATION_SEED,
    _grid,
    _pdf,
    _step,
    critical_table,
    first_crossings,
    level_for,
    null_t_paths,
    spent,
)
from tlmsearch.errors import ConfigError

STAGE_SPENDINGS = ("obf", "pocock")
GRID_POINTS = 48  # nominal increments tried by the calibration


@dataclass(frozen=True)
class Stage:
    """An earlier stage of a history: its last look's seeds per profile, the cumulative alpha the
    history had spent by its end, and its spending function."""

    end: int
    alpha: float
    spending: str = "obf"

    def to_dict(self) -> dict[str, Any]:
        return {"end": self.end, "alpha": self.alpha, "spending": self.spending}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Stage:
        return cls(end=int(d["end"]), alpha=float(d["alpha"]), spending=str(d.get("spending", "obf")))


def check_stages(looks: Sequence[int], stages: Sequence[Stage], alpha: float) -> None:
    """Refuse a history whose stages do not end at looks, rise, or leave no alpha to the last."""
    ends = [s.end for s in stages]
    alphas = [s.alpha for s in stages]
    for s in stages:
        if s.end not in looks or s.end >= looks[-1]:
            raise ConfigError(
                f"a stage ending at {s.end} seeds must end at one of the looks {tuple(looks)} before the last"
            )
        if s.spending not in STAGE_SPENDINGS:
            raise ConfigError(
                f"a stage's spending={s.spending!r} is not allowed; choose one of: {', '.join(STAGE_SPENDINGS)}"
            )
    if any(b <= a for a, b in zip(ends, ends[1:], strict=False)):
        raise ConfigError(f"the stages' ends {ends} must increase")
    levels = [*alphas, alpha]
    if levels[0] <= 0 or any(b <= a for a, b in zip(levels, levels[1:], strict=False)):
        raise ConfigError(
            f"the history's alpha must rise from stage to stage ({', '.join(f'{a:g}' for a in levels)}): "
            "a new stage spends only alpha the earlier ones did not"
        )


# ----------------------------------------------------------------------------- z boundaries


def z_continue(fractions: Sequence[float], fixed: Sequence[float], increments: Sequence[float]) -> np.ndarray:
    """Critical values of Z at looks at information `fractions` (of the last look): the first
    len(fixed) are given (inf: that look cannot cross), each later one spends its increment:
    P0(no crossing before look k, Z_k >= c_k) = increments[k - len(fixed)]. With nothing fixed this
    is `sequential_bounds.z_boundaries` given its increments (the same integration)."""
    from scipy import optimize, special, stats

    t = np.asarray(fractions, float)
    k0 = len(fixed)
    inc = np.asarray(increments, float)
    if inc.size != t.size - k0:
        raise ValueError(f"{t.size} looks need {t.size - k0} increments after {k0} fixed boundaries, got {inc.size}")
    steps = np.diff(np.concatenate([[0.0], t]))
    h = float(min(0.01, np.sqrt(steps.min()) / 20.0))
    out = np.empty(t.size)
    x = mass = np.zeros(0)
    for k in range(t.size):
        sd = math.sqrt(steps[k])
        if k < k0:
            out[k] = float(fixed[k])
        elif inc[k - k0] < 1e-14:
            out[k] = np.inf
        elif k == 0:
            out[k] = stats.norm.isf(inc[0])
        else:
            target = float(inc[k - k0])

            def cross(c: float, xs: np.ndarray = x, ms: np.ndarray = mass, sd: float = sd, tk: float = t[k]) -> float:
                return float(np.sum(ms * special.ndtr((xs - c * math.sqrt(tk)) / sd)))

            hi = stats.norm.isf(target) + 1.0
            out[k] = optimize.brentq(lambda c, g=target: cross(c) - g, -12.0, hi, xtol=1e-10)
        if k == t.size - 1:
            break
        top = out[k] * math.sqrt(t[k]) if np.isfinite(out[k]) else 10.0 * math.sqrt(t[k]) + 10.0
        new_x, w = _grid(-10.0 * math.sqrt(t[k]) - 1.0, top, h)
        dens = _pdf(new_x / sd) / sd if k == 0 else _step(x, mass, new_x, sd, h)
        x, mass = new_x, w * dens
    return out


def z_of_t(crit: Sequence[float], looks: Sequence[int]) -> np.ndarray:
    """The z value with the same upper tail probability as each t boundary (n - 1 df)."""
    from scipy import stats

    c, ns = np.asarray(crit, float), np.asarray(looks, float)
    with np.errstate(over="ignore"):
        return np.where(np.isfinite(c), stats.norm.isf(stats.t.sf(c, ns - 1.0)), np.inf)


def t_of_z(z: Sequence[float], looks: Sequence[int]) -> np.ndarray:
    from scipy import stats

    zz, ns = np.asarray(z, float), np.asarray(looks, float)
    with np.errstate(over="ignore"):
        return np.where(np.isfinite(zz), stats.t.isf(stats.norm.sf(zz), ns - 1.0), np.inf)


def stage_t_boundaries(looks: Sequence[int], prefix: Sequence[float], increment: float, spending: str) -> np.ndarray:
    """t boundaries of a new stage's looks (the looks after len(prefix)) spending `increment`
    over the stage's own information fraction, after earlier looks with t boundaries `prefix`."""
    ns = np.asarray(looks, float)
    k0 = len(prefix)
    prev = ns[k0 - 1]
    u = (ns[k0:] - prev) / (ns[-1] - prev)
    incs = np.diff(np.concatenate([[0.0], spent(u, increment, spending)]))
    z = z_continue(ns / ns[-1], z_of_t(prefix, looks[:k0]), incs)
    return t_of_z(z[k0:], ns[k0:])


# ----------------------------------------------------------------------------- the table


def _stage_row(
    looks: tuple[int, ...], prefix: np.ndarray, before: float, target: float, spending: str, calibrate: bool
) -> np.ndarray:
    """A new stage's row (its looks' t boundaries) of Holm's level whose history reaches `target`
    after the earlier looks' `prefix` spent `before` (both already divided by r)."""
    gap = target - before
    if not calibrate:
        return stage_t_boundaries(looks, prefix, gap, spending)
    k0 = len(prefix)
    grid = np.geomspace(gap / 4.0, min(0.49, gap * 2.0), GRID_POINTS)
    crit = np.vstack([stage_t_boundaries(looks, prefix, float(a), spending) for a in grid])  # falling in a
    n_paths = int(min(CALIBRATION_MAX_PATHS, max(CALIBRATION_PATHS, math.ceil(CALIBRATION_CROSSINGS / gap))))
    counts = np.zeros(grid.size + 1)
    early = 0  # paths that cross at an earlier stage's look, under its fixed boundaries
    for i, start in enumerate(range(0, n_paths, CALIBRATION_PATHS)):
        paths = null_t_paths(looks, min(CALIBRATION_PATHS, n_paths - start), CALIBRATION_SEED + 1000 + i)
        crossed = np.any(paths[:, :k0] >= np.where(np.isfinite(prefix), prefix, np.inf), axis=1)
        early += int(crossed.sum())
        counts += np.bincount(first_crossings(crit, paths[~crossed, k0:]), minlength=grid.size + 1)
    level = level_for([target], (early + np.cumsum(counts[: grid.size])) / n_paths, grid)[0]
    return stage_t_boundaries(looks, prefix, float(level), spending)


@lru_cache(maxsize=64)
def history_table(
    looks: tuple[int, ...], stages: tuple[Stage, ...], alpha: float, spending: str, m: int, calibrate: bool
) -> np.ndarray:
    """(m + 1, K) critical t values of a history: row r (level alpha_s / r by stage s) holds the
    first stage's own design's boundaries, then each later stage's (row 0: +inf)."""
    check_stages(looks, stages, alpha)
    ends = [s.end for s in stages] + [looks[-1]]
    alphas = [s.alpha for s in stages] + [alpha]
    spendings = [s.spending for s in stages] + [spending]
    cut = [looks.index(e) + 1 for e in ends]
    table = np.array(critical_table(looks[: cut[0]], alphas[0], spendings[0], m, calibrate), copy=True)
    for s in range(1, len(ends)):
        sub = looks[: cut[s]]
        cols = np.full((m + 1, cut[s] - cut[s - 1]), np.inf)
        for r in range(1, m + 1):
            cols[r] = _stage_row(sub, table[r], alphas[s - 1] / r, alphas[s] / r, spendings[s], calibrate)
        table = np.hstack([table, cols])
    table.setflags(write=False)
    return table


__all__ = [
    "STAGE_SPENDINGS",
    "Stage",
    "check_stages",
    "history_table",
    "stage_t_boundaries",
    "t_of_z",
    "z_continue",
    "z_of_t",
]
