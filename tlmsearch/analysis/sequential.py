"""Group-sequential verification: look at the seeds several times, stop the candidates already
decided, and keep every claim at level alpha.

Today's fixed plan (`planning`, `pilot`) spends a variance-only pilot and then decides once on a
number of fresh seeds planned for the worst case. A group-sequential design instead trains the
seeds in K stages and looks after each: at look k every profile has n_k seeds (planned in advance,
n_k = ceil(k / K * N_max)), and each candidate's paired log gain over cosine is tested with the
same two one-sided t tests as the fixed verdict (`decision.py`):

- superiority, H0_j: gain_j <= 0 (T = mean / se);
- non-inferiority of cosine, H0_j: gain_j >= delta = log(1 + margin) (T = (delta - mean) / se).

Repeated looks would inflate the error of each test, so each gets a Lan-DeMets alpha-spending
function (O'Brien-Fleming type by default: alpha(t) = 2 - 2 Phi(z[1 - a/2] / sqrt(t)), which spends
almost nothing at the early looks and nearly the whole level at the last; or Pocock type,
a * log(1 + (e - 1) t)), t = n_k / N_max the information fraction. Its critical values are exact
for a z statistic (the joint law of the looks is that of Brownian motion, integrated here on a
grid, Armitage-McPherson-Rowe); the t statistic at look k is compared with the t quantile of the
same nominal tail probability at n_k - 1 degrees of freedom (the "significance level approach" of
Jennison and Turnbull, ch. 11). That conversion is an approximation; the simulation against known
truth (`simulate`, `bench/bench_sequential.py`) measures what it gives.

Holm across the m candidates, at each look, within each family: a candidate's hypothesis is
rejected at level alpha / r at look k when its statistic crossed the level-(alpha / r) boundary
at some look l <= k while it was still training; Holm's step-down over those levels is the closed
test of weighted-Bonferroni group-sequential tests (Maurer and Bretz 2013), so it holds the
familywise level for any correlation between candidates (they share cosine's seeds).

A candidate is decided, and stops training with its result frozen, once it is shown better or
shown within the margin. With `settle` (default) a candidate shown better ends the whole study:
the outcome is "better" whatever follows. The study also ends when no candidate is left, or at
the last look. The outcome, in the fixed verdict's words: "better" when some candidate is shown
better, else "near_optimal" when every candidate is shown within the margin, else "inconclusive".
Each candidate's interval is the repeated confidence interval mean +/- c_k se at the Bonferroni
level alpha / m of its last look, which covers the true gain at all looks at once with
probability >= 1 - 2 alpha / m.

Pure numpy/scipy: no records, no files. `tuning/verify.py` applies `decide` to one study's
records after each stage; `simulate` applies the same function to many simulated studies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from tlmsearch.analysis.decision import BETTER, INCONCLUSIVE, NEAR_OPTIMAL, OUTCOMES, check_levels, holm, log_margin
from tlmsearch.errors import ConfigError

SPENDING = ("obf", "pocock", "nominal")  # "nominal": no spending, alpha at every look (wrong; for tests)
DEFAULT_LOOKS = 4
MAX_LOOKS = 20


# ----------------------------------------------------------------------------- the design


@dataclass(frozen=True)
class Design:
    """A group-sequential plan: cumulative seeds per profile at each look, and the levels."""

    looks: tuple[int, ...]  # n_1 < ... < n_K seeds per profile at each look; n_K = N_max
    margin: float = 0.01
    alpha: float = 0.05
    spending: str = "obf"
    calibrate: bool = True  # correct the t conversion by simulation (`calibrated_levels`)

    def __post_init__(self) -> None:
        check_levels(self.margin, self.alpha)
        if self.spending not in SPENDING:
            raise ConfigError(f"spending={self.spending!r} is not allowed; choose one of: {', '.join(SPENDING)}")
        ns = self.looks
        if not ns or any(isinstance(n, bool) or not isinstance(n, int) for n in ns):
            raise ConfigError(f"looks={ns!r} must be a non-empty tuple of seed counts")
        if ns[0] < 2 or any(b <= a for a, b in zip(ns, ns[1:], strict=False)):
            raise ConfigError(f"looks={ns!r} must increase and start at >= 2 seeds (a paired t test needs two)")

    @property
    def n_looks(self) -> int:
        return len(self.looks)

    @property
    def max_seeds(self) -> int:
        return self.looks[-1]

    @property
    def fractions(self) -> tuple[float, ...]:
        return tuple(n / self.max_seeds for n in self.looks)

    def critical(self, n_candidates: int) -> np.ndarray:
        """(m + 1, K) critical values of the t statistic: row r is level alpha / r (row 0: +inf)."""
        return _critical_table(self.looks, self.alpha, self.spending, n_candidates, self.calibrate)

    def describe(self) -> str:
        sched = ", ".join(str(n) for n in self.looks)
        return (
            f"group-sequential: {self.n_looks} looks at {sched} seeds per profile, {_SPENDING_NAMES[self.spending]} "
            f"alpha spending, alpha {self.alpha:g} for each claim, Holm over the candidates at each look"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"looks": list(self.looks), "margin": self.margin, "alpha": self.alpha, "spending": self.spending}


_SPENDING_NAMES = {
    "obf": "O'Brien-Fleming-type",
    "pocock": "Pocock-type",
    "nominal": "no (nominal level at every look)",
}


def look_schedule(max_seeds: int, looks: int, first: int = 2) -> tuple[int, ...]:
    """n_k = ceil(k / K * max_seeds), k = 1..K, the first at least `first` seeds (duplicates merged)."""
    if isinstance(looks, bool) or not isinstance(looks, int) or not 1 <= looks <= MAX_LOOKS:
        raise ConfigError(f"looks={looks!r} must be an integer from 1 to {MAX_LOOKS}")
    if isinstance(max_seeds, bool) or not isinstance(max_seeds, int) or max_seeds < first:
        raise ConfigError(f"the most seeds {max_seeds!r} must be an integer >= {first} for a sequential design")
    ns = [max(first, math.ceil(k * max_seeds / looks)) for k in range(1, looks + 1)]
    return tuple(sorted(set(ns)))


def design(
    max_seeds: int, looks: int = DEFAULT_LOOKS, *, margin: float = 0.01, alpha: float = 0.05, spending: str = "obf"
) -> Design:
    """The design with `looks` equally spaced looks up to `max_seeds` seeds per profile."""
    return Design(looks=look_schedule(max_seeds, looks), margin=margin, alpha=alpha, spending=spending)


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


CALIBRATION_PATHS = 400_000
CALIBRATION_SEED = 20261202


def calibrated_levels(
    looks: Sequence[int], targets: Sequence[float], spending: str, n_paths: int = CALIBRATION_PATHS
) -> np.ndarray:
    """For each target level a, the nominal level a' whose converted t boundaries cross with
    probability a under H0 (simulated, `n_paths` fixed paths: relative Monte-Carlo error about
    1 / sqrt(n_paths * a), 2% at a = 0.006). The plain conversion is liberal at few seeds (a
    level-0.05 O'Brien-Fleming design at 2, 4, 6 seeds crosses 0.054 of the time)."""
    tgt = np.asarray(targets, float)
    grid = np.geomspace(tgt.min() / 4.0, min(0.49, tgt.max() * 1.5), 64)
    crit = np.vstack([t_boundaries(looks, a, spending) for a in grid])  # (L, K), falling in the level
    paths = null_t_paths(looks, n_paths, CALIBRATION_SEED)
    first = np.full(n_paths, grid.size)  # smallest grid index at which the path crosses
    for k in range(crit.shape[1]):
        c = np.where(np.isfinite(crit[:, k]), crit[:, k], np.finfo(float).max)[::-1]  # rising
        passed = np.searchsorted(c, paths[:, k], side="right")  # levels from the top it passes
        first = np.minimum(first, np.where(passed > 0, grid.size - passed, grid.size))
    prob = np.cumsum(np.bincount(first, minlength=grid.size + 1)[: grid.size]) / n_paths
    ok = prob > 0
    return np.exp(np.interp(np.log(tgt), np.log(prob[ok]), np.log(grid[ok])))


@lru_cache(maxsize=256)
def _critical_table(looks: tuple[int, ...], alpha: float, spending: str, m: int, calibrate: bool) -> np.ndarray:
    targets = [alpha / r for r in range(1, m + 1)]
    if calibrate and spending != "nominal" and len(looks) > 1:
        levels = calibrated_levels(looks, targets, spending)
    else:
        levels = np.asarray(targets)
    rows = [np.full(len(looks), np.inf)] + [t_boundaries(looks, float(a), spending) for a in levels]
    table = np.vstack(rows)
    table.setflags(write=False)
    return table


# ----------------------------------------------------------------------------- the decision


@dataclass(frozen=True)
class Sequential:
    """The sequential decision of S studies with m candidates (arrays; S may be 1).

    Look indices count from 0; seeds are the design's `looks[index]`."""

    design: Design
    outcome: np.ndarray  # (S,) codes into OUTCOMES
    last_look: np.ndarray  # (S,) index of the last look taken (cosine trained to it)
    stop_look: np.ndarray  # (S, m) index of the look at which each candidate stopped
    shown_better: np.ndarray  # (S, m) Holm-rejected superiority
    within_margin: np.ndarray  # (S, m) Holm-rejected non-inferiority
    decided_look: np.ndarray  # (S, m) look at which the candidate was decided (-1: never)
    mean: np.ndarray  # (S, m) paired log gain at the candidate's last look
    se: np.ndarray  # (S, m) its standard error
    low: np.ndarray  # (S, m) repeated-confidence bounds at alpha / m, log scale
    high: np.ndarray
    active: np.ndarray  # (S, m) still undecided after the looks taken: they train the next stage

    @property
    def cosine_seeds(self) -> np.ndarray:
        return np.asarray(self.design.looks)[self.last_look]

    @property
    def candidate_seeds(self) -> np.ndarray:
        return np.asarray(self.design.looks)[self.stop_look]

    @property
    def runs(self) -> np.ndarray:
        """(S,) training runs: cosine's seeds plus every candidate's."""
        return self.cosine_seeds + self.candidate_seeds.sum(axis=-1)

    @property
    def seeds_per_profile(self) -> np.ndarray:
        """(S,) runs / (m + 1): the mean seeds a profile trained."""
        return self.runs / (self.stop_look.shape[-1] + 1)

    def rate(self, outcome: str) -> float:
        return float(np.mean(self.outcome == OUTCOMES.index(outcome)))

    def mc_se(self, outcome: str) -> float:
        p = self.rate(outcome)
        return math.sqrt(p * (1 - p) / self.outcome.size)


def t_stats(
    sums: np.ndarray, squares: np.ndarray, n: int, delta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(mean, se, T superiority, T non-inferiority) over the first n seeds, from the sum and the
    sum of squares of those seeds' paired log gains (shaped (..., m))."""
    mean = sums / n
    var = np.maximum(squares - n * mean * mean, 0.0) / (n - 1)
    se = np.sqrt(var / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_sup = np.where(se > 0, mean / se, np.sign(mean) * np.inf)
        t_ni = np.where(se > 0, (delta - mean) / se, np.sign(delta - mean) * np.inf)
    bad = ~np.isfinite(mean) | ~np.isfinite(se)
    return (
        mean,
        se,
        np.where(bad, -np.inf, np.nan_to_num(t_sup, nan=-np.inf)),
        np.where(bad, -np.inf, np.nan_to_num(t_ni, nan=-np.inf)),
    )


def _levels_passed(t: np.ndarray, crit: np.ndarray) -> np.ndarray:
    """The largest r with t >= crit[r] (crit rising in r; crit[0] = inf never passes): 0..m."""
    finite = crit[1:]
    return np.searchsorted(
        np.where(np.isfinite(finite), finite, np.finfo(float).max), np.minimum(t, 1e300), side="right"
    )


def _holm_rejects(passed: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's step-down over the levels each hypothesis passed (r: passed at alpha / r)."""
    with np.errstate(divide="ignore"):
        q = np.where(passed > 0, alpha / np.maximum(passed, 1), 1.0)
    return holm(q) <= alpha * (1 + 1e-12)


def decide(gains: Any, design: Design, *, through: int | None = None, settle: bool = True) -> Sequential:
    """The sequential decision for paired log gains shaped (S, m, N) (or (m, N) for one study),
    seeds in training order, N >= the seeds of the looks taken. `through`: the looks available
    (default all K); values of a candidate after its stop are never read (they may be nan)."""
    d = np.asarray(gains, float)
    one = d.ndim == 2
    if one:
        d = d[None]
    S, m, N = d.shape
    K = design.n_looks if through is None else int(through)
    if not 1 <= K <= design.n_looks:
        raise ValueError(f"through={through} must lie in 1..{design.n_looks}")
    if N < design.looks[0]:
        raise ValueError(f"{N} seeds is fewer than the first look's {design.looks[0]}")
    crit = design.critical(m)
    delta = log_margin(design.margin)
    active = np.ones((S, m), bool)
    running = np.ones(S, bool)
    best_sup = np.zeros((S, m), int)
    best_ni = np.zeros((S, m), int)
    sup = np.zeros((S, m), bool)
    ni = np.zeros((S, m), bool)
    stop = np.zeros((S, m), int)
    last = np.zeros(S, int)
    decided_at = np.full((S, m), -1)
    mean = np.full((S, m), np.nan)
    se = np.full((S, m), np.nan)
    at = np.zeros((S, m), int)  # look of each candidate's latest statistics
    sums = np.zeros((S, m))
    squares = np.zeros((S, m))
    for k in range(K):
        n = design.looks[k]
        if n > N or not running.any():
            break
        prev = design.looks[k - 1] if k else 0
        sums = sums + d[..., prev:n].sum(axis=-1)
        squares = squares + (d[..., prev:n] ** 2).sum(axis=-1)
        mk, sk, ts, tn = t_stats(sums, squares, n, delta)
        mean = np.where(active, mk, mean)
        se = np.where(active, sk, se)
        at = np.where(active, k, at)
        stop = np.where(active, k, stop)
        last = np.where(running, k, last)
        best_sup = np.where(active, np.maximum(best_sup, _levels_passed(ts, crit[:, k])), best_sup)
        best_ni = np.where(active, np.maximum(best_ni, _levels_passed(tn, crit[:, k])), best_ni)
        sup = _holm_rejects(best_sup, design.alpha)
        ni = _holm_rejects(best_ni, design.alpha)
        decided = sup | ni
        decided_at = np.where((decided_at < 0) & decided, k, decided_at)
        active &= ~decided
        if settle:
            active &= ~sup.any(axis=-1, keepdims=True)
        running &= active.any(axis=-1)
    outcome = np.where(sup.any(-1), BETTER, np.where(ni.all(-1), NEAR_OPTIMAL, INCONCLUSIVE))
    c = crit[m][at]  # Bonferroni alpha / m boundary at each candidate's last look
    low, high = mean - c * se, mean + c * se
    out = Sequential(design, outcome, last, stop, sup, ni, decided_at, mean, se, low, high, active)
    if one:
        return Sequential(*(out.design,), *(getattr(out, f)[0] for f in _ARRAY_FIELDS))
    return out


_ARRAY_FIELDS = (
    "outcome",
    "last_look",
    "stop_look",
    "shown_better",
    "within_margin",
    "decided_look",
    "mean",
    "se",
    "low",
    "high",
    "active",
)


# ----------------------------------------------------------------------------- simulation


def simulate_gains(
    true_gains: Sequence[float], sd_pair: float, n_studies: int, n_seeds: int, rng: np.random.Generator
) -> np.ndarray:
    """(S, m, N) paired log gains of simulated studies, as `simulation.simulate` builds them:
    each profile's per-seed log perplexity carries independent noise sd_pair / sqrt(2), so each
    paired gain has sd `sd_pair` and two candidates' gains correlate at 0.5 through cosine."""
    g = np.log1p(np.asarray(true_gains, float))
    noise = sd_pair / math.sqrt(2.0)
    cos = rng.normal(0.0, noise, (n_studies, 1, n_seeds))
    cand = rng.normal(0.0, noise, (n_studies, g.size, n_seeds))
    return g[None, :, None] + cos - cand


@dataclass(frozen=True)
class SimSummary:
    """Rates of each outcome and seeds spent over simulated studies."""

    n_studies: int
    better: float
    near_optimal: float
    inconclusive: float
    seeds_per_profile: float  # mean runs / (m + 1)
    cosine_seeds: float  # mean seeds of cosine (the look the study stopped at)
    max_seeds: int

    def mc_se(self, rate: float) -> float:
        return math.sqrt(max(rate * (1.0 - rate), 0.0) / self.n_studies)


def simulate(
    true_gains: Sequence[float],
    sd_pair: float,
    design: Design,
    *,
    n_studies: int = 20_000,
    seed: int = 0,
    settle: bool = True,
    chunk: int = 4000,
) -> SimSummary:
    """Run `n_studies` simulated studies through `decide`, in chunks (memory: chunk x m x N_max)."""
    rng = np.random.default_rng(seed)
    counts = np.zeros(3)
    runs = cos = 0.0
    m = len(true_gains)
    done = 0
    while done < n_studies:
        s = min(chunk, n_studies - done)
        res = decide(simulate_gains(true_gains, sd_pair, s, design.max_seeds, rng), design, settle=settle)
        counts += np.bincount(res.outcome, minlength=3)
        runs += float(res.runs.sum())
        cos += float(res.cosine_seeds.sum())
        done += s
    rates = counts / n_studies
    return SimSummary(
        n_studies,
        float(rates[0]),
        float(rates[1]),
        float(rates[2]),
        runs / n_studies / (m + 1),
        cos / n_studies,
        design.max_seeds,
    )


# ----------------------------------------------------------------------------- planning


def power_near_optimal(
    sd_pair: float,
    n_candidates: int,
    max_seeds: int,
    looks: int,
    *,
    margin: float = 0.01,
    alpha: float = 0.05,
    spending: str = "obf",
    n_studies: int = 2000,
    seed: int = 0,
    calibrate: bool = True,
) -> float:
    """Simulated probability that the design shows every candidate within the margin when every
    candidate truly equals cosine (the target today's planner aims at)."""
    d = Design(
        looks=look_schedule(max_seeds, looks), margin=margin, alpha=alpha, spending=spending, calibrate=calibrate
    )
    return simulate([0.0] * n_candidates, sd_pair, d, n_studies=n_studies, seed=seed).near_optimal


def plan_max_seeds(
    sd_pair: float,
    n_candidates: int,
    looks: int = DEFAULT_LOOKS,
    *,
    margin: float = 0.01,
    alpha: float = 0.05,
    power: float = 0.8,
    spending: str = "obf",
    cap: int = 1000,
    n_studies: int = 2000,
    seed: int = 0,
) -> int:
    """The fewest seeds N_max (<= `cap`) whose design reaches `power` for "near_optimal" when all
    candidates equal cosine at paired sd `sd_pair`, found by simulated studies (the same seed for
    every N) and bisection from the fixed plan's count. Returns `cap` when the cap falls short.
    Unlike today's planner (Bonferroni with independent candidates, which at 8 candidates
    overshoots its 80% target to about 97%), this aims at the target itself. The boundaries here
    skip the t calibration (`calibrated_levels`): it moves the level by a few percent of alpha
    and the power by far less."""
    from tlmsearch.analysis.planning import seeds_for

    def ok(n: int) -> bool:
        kw = {"margin": margin, "alpha": alpha, "spending": spending, "n_studies": n_studies, "seed": seed}
        return power_near_optimal(sd_pair, n_candidates, n, looks, calibrate=False, **kw) >= power  # type: ignore[arg-type]

    m = n_candidates
    guess = int(seeds_for(sd_pair, log_margin(margin), alpha_one_sided=alpha / m, power=power ** (1.0 / m)))
    lo, hi = 2, min(cap, guess if guess > 0 else cap)
    while not ok(hi):
        if hi >= cap:
            return cap
        lo, hi = hi + 1, min(cap, 2 * hi)
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


__all__ = [
    "DEFAULT_LOOKS",
    "MAX_LOOKS",
    "SPENDING",
    "Design",
    "Sequential",
    "SimSummary",
    "decide",
    "design",
    "look_schedule",
    "plan_max_seeds",
    "power_near_optimal",
    "simulate",
    "simulate_gains",
    "spent",
    "t_boundaries",
    "z_boundaries",
]
