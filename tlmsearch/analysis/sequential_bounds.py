"""Group-sequential boundaries: Lan-DeMets alpha spending, the critical values of Z by numerical
integration, their t versions, and the simulated calibration of the t conversion (pure).

The design and the decision that use them are `sequential.py`'s; see its docstring.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from tlmsearch.errors import ConfigError

# ----------------------------------------------------------------------------- alpha spending


def spent(t: Any, a: float, spending: str) -> np.ndarray:
    """Cumulative one-sided alpha spent by information fraction t (Lan-DeMets)."""
    from scipy import stats

    t = np.clip(np.asarray(t, float), 0.0, 1.0)
    if spending == "obf":
        with np.errstate(divide="ignore"):
            return np.where(t > 0, 2.0 * stats.norm.sf(stats.norm.isf(a / 2.0) / np.sqrt(t)), 0.0)
    if spending == "pocock":
        return a * np.log1p((math.e - 1.0) * t)
    raise ConfigError(f"spending={spending!r} has no spending function")


def z_boundaries(fractions: Sequence[float], a: float, spending: str = "obf") -> np.ndarray:
    """Upper critical values c_1..c_K of Z_k (one-sided level `a` in all) for looks at the given
    information fractions: P0(Z_l < c_l for l < k, Z_k >= c_k) = alpha(t_k) - alpha(t_{k-1}).
    "nominal" gives z[1 - a] at every look (no correction: the wrong procedure).

    Numerical integration of the score B(t) = Z sqrt(t) (Brownian motion) on an evenly spaced
    grid (so that each step is one convolution) closed by the boundary point itself."""
    from scipy import optimize, special, stats

    t = np.asarray(fractions, float)
    if spending == "nominal":
        return np.full(t.size, stats.norm.isf(a))
    cum = spent(t, a, spending)
    inc = np.diff(np.concatenate([[0.0], cum]))
    steps = np.diff(np.concatenate([[0.0], t]))
    h = float(min(0.01, np.sqrt(steps.min()) / 20.0))
    out = np.empty(t.size)
    x = mass = np.zeros(0)  # grid of B(t_{k-1}) below the boundary, and its probability weights
    for k in range(t.size):
        sd = math.sqrt(steps[k])
        if k == 0 or inc[k] < 1e-14:
            out[k] = stats.norm.isf(max(inc[k], 1e-300)) if inc[k] > 0 else np.inf
        else:

            def cross(c: float, xs: np.ndarray = x, ms: np.ndarray = mass, sd: float = sd, tk: float = t[k]) -> float:
                return float(np.sum(ms * special.ndtr((xs - c * math.sqrt(tk)) / sd)))

            lo = stats.norm.isf(min(0.5, inc[k] + cum[k - 1]))
            hi = stats.norm.isf(inc[k])
            target = float(inc[k])
            out[k] = optimize.brentq(lambda c, g=target: cross(c) - g, lo - 1.0, hi + 1.0, xtol=1e-10)
        if k == t.size - 1:
            break
        top = out[k] * math.sqrt(t[k]) if np.isfinite(out[k]) else 10.0 * math.sqrt(t[k]) + 10.0
        new_x, w = _grid(-10.0 * math.sqrt(t[k]) - 1.0, top, h)
        if k == 0:
            dens = _pdf(new_x / sd) / sd
        else:
            dens = _step(x, mass, new_x, sd, h)
        x, mass = new_x, w * dens
    return out


def _grid(lo: float, top: float, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Points h*i (lo <= h*i < top) and `top`, with trapezoid weights."""
    i0, i1 = math.floor(lo / h), math.ceil(top / h) - 1
    xs = np.append(h * np.arange(i0, i1 + 1), top)
    w = np.full(xs.size, h)
    w[0] = h / 2.0
    last = top - xs[-2]
    w[-2] = h / 2.0 + last / 2.0
    w[-1] = last / 2.0
    return xs, w


def _step(x: np.ndarray, mass: np.ndarray, new_x: np.ndarray, sd: float, h: float) -> np.ndarray:
    """Density of B at the points `new_x` after a Gaussian step of sd `sd` from point masses
    `mass` at `x` (both grids: multiples of h, then one extra point)."""
    reg, new_reg = x[:-1], new_x[:-1]
    a0, b0 = round(reg[0] / h), round(new_reg[0] / h)
    offsets = np.arange(b0 - round(reg[-1] / h), round(new_reg[-1] / h) - a0 + 1) * h
    full = np.convolve(mass[:-1], _pdf(offsets / sd) / sd)
    dens = np.empty(new_x.size)
    dens[:-1] = full[reg.size - 1 : reg.size - 1 + new_reg.size]
    dens[:-1] += mass[-1] * _pdf((new_reg - x[-1]) / sd) / sd
    dens[-1] = float(np.sum(mass * _pdf((new_x[-1] - x) / sd))) / sd
    return dens


def _pdf(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def t_boundaries(looks: Sequence[int], a: float, spending: str = "obf") -> np.ndarray:
    """Critical values of the paired t statistic at looks of n_k seeds: the t quantile with the
    nominal tail probability of the z boundary at n_k - 1 degrees of freedom."""
    from scipy import stats

    ns = np.asarray(looks, float)
    z = z_boundaries(ns / ns[-1], a, spending)
    with np.errstate(over="ignore"):
        return np.where(np.isfinite(z), stats.t.isf(stats.norm.sf(z), ns - 1.0), np.inf)


def null_t_paths(looks: Sequence[int], n_paths: int, seed: int = 0) -> np.ndarray:
    """(n_paths, K) paired t statistics at the looks under H0 (mean 0). Their joint law is free of
    the spread (pivotal), so standard normal data stand for any; drawn stage by stage from the
    sufficient statistics (each stage's sum and within-stage sum of squares), not seed by seed."""
    rng = np.random.default_rng(seed)
    ns = np.asarray(looks, float)
    sizes = np.diff(np.concatenate([[0.0], ns]))
    sums = rng.normal(0.0, np.sqrt(sizes), (n_paths, sizes.size))
    within = np.where(sizes > 1, rng.chisquare(np.maximum(sizes - 1.0, 1.0), (n_paths, sizes.size)), 0.0)
    total = np.cumsum(sums, axis=1)
    squares = np.cumsum(within + sums**2 / sizes, axis=1)
    mean = total / ns
    var = (squares - ns * mean**2) / (ns - 1.0)
    return mean / np.sqrt(var / ns)


CALIBRATION_PATHS = 400_000  # paths per chunk, and the fewest in all
CALIBRATION_CROSSINGS = 10_000  # paths enough for this many crossings at the smallest level
CALIBRATION_MAX_PATHS = 4_000_000
CALIBRATION_SEED = 20261202


def calibrated_levels(
    looks: Sequence[int], targets: Sequence[float], spending: str, n_paths: int | None = None
) -> np.ndarray:
    """For each target level a, the nominal level a' whose converted t boundaries cross with
    probability a under H0, simulated on fixed paths: by default enough for 10,000 crossings at
    the smallest target (1.6 million at a = 0.00625), at least 400,000 and at most 4 million, so
    the relative Monte-Carlo error is about 1% (1 / sqrt(n_paths * a)). The plain conversion is
    liberal at few seeds (a level-0.05 O'Brien-Fleming design at 2, 4, 6 seeds crosses 0.053 of
    the time)."""
    tgt = np.asarray(targets, float)
    if n_paths is None:
        n_paths = int(min(CALIBRATION_MAX_PATHS, max(CALIBRATION_PATHS, math.ceil(CALIBRATION_CROSSINGS / tgt.min()))))
    grid = np.geomspace(tgt.min() / 4.0, min(0.49, tgt.max() * 1.5), 64)
    crit = np.vstack([t_boundaries(looks, a, spending) for a in grid])  # (L, K), falling in the level
    counts = np.zeros(grid.size + 1)
    for i, start in enumerate(range(0, n_paths, CALIBRATION_PATHS)):
        paths = null_t_paths(looks, min(CALIBRATION_PATHS, n_paths - start), CALIBRATION_SEED + i)
        counts += np.bincount(first_crossings(crit, paths), minlength=grid.size + 1)
    return level_for(tgt, np.cumsum(counts[: grid.size]) / n_paths, grid)


def first_crossings(crit: np.ndarray, paths: np.ndarray) -> np.ndarray:
    """For each path (a row of `paths`: its t statistics at the looks), the smallest index of the
    grid's levels (the rows of `crit`: each level's boundaries at the same looks, falling as the
    level rises) at which it crosses at some look; len(crit) where it crosses at none."""
    n = crit.shape[0]
    rising = np.where(np.isfinite(crit), crit, np.finfo(float).max)[::-1]  # per look, from the top level
    first = np.full(paths.shape[0], n)
    for k in range(crit.shape[1]):
        passed = np.searchsorted(rising[:, k], paths[:, k], side="right")  # levels from the top it passes
        first = np.minimum(first, n - passed)
    return first


def level_for(targets: Any, prob: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The nominal levels whose crossing probabilities are `targets`, given `prob`, the crossing
    probability at each of the `grid`'s levels (rising): log-log interpolation over the levels
    where `prob` is positive and rises, clamped to the first and last of them."""
    ok = np.concatenate([[True], np.diff(prob) > 0]) & (prob > 0)
    return np.exp(np.interp(np.log(np.asarray(targets, float)), np.log(prob[ok]), np.log(grid[ok])))


@lru_cache(maxsize=256)
def critical_table(looks: tuple[int, ...], alpha: float, spending: str, m: int, calibrate: bool) -> np.ndarray:
    targets = [alpha / r for r in range(1, m + 1)]
    if calibrate and spending != "nominal" and len(looks) > 1:
        levels = calibrated_levels(looks, targets, spending)
    else:
        levels = np.asarray(targets)
    rows = [np.full(len(looks), np.inf)] + [t_boundaries(looks, float(a), spending) for a in levels]
    table = np.vstack(rows)
    table.setflags(write=False)
    return table


__all__ = [
    "CALIBRATION_PATHS",
    "calibrated_levels",
    "critical_table",
    "first_crossings",
    "level_for",
    "null_t_paths",
    "spent",
    "t_boundaries",
    "z_boundaries",
]
