"""Learning-rate calibration: the rate every trial of a search trains at, chosen on uniform (pure).

One learning rate for every architecture confounds the question: a width profile can win
because it tolerates a rate that is wrong for the architecture, not because it spends the
budget better. So, before its noise floor and its trials, a search may train the uniform
profile at each rate of a grid with a few paired seeds and take the rate the rule below
chooses (about the lowest mean final `val_loss`) as `TrainConfig.lr` of every later trial of
that search (noise floor, search trials, and the verification that re-trains them: the run's
`search.yaml` holds it).

- **The grid** (`SearchConfig.lr_calibration`): "auto" is the configured rate times 1/4, 1/2,
  1, 2, 4 (five log-spaced values, factor 2 apart: 16x in all, wide enough that a rate off by
  4x either way is inside it); or an explicit list of at least `MIN_RATES` positive rates; or
  "off". A search writes the grid out as its explicit list in `search.yaml`, so a resume
  trains exactly the rates it planned even after `train.lr` became the chosen one.
- **The length**: each calibration trial trains the search's trial length times
  `SearchConfig.lr_calibration_fraction` (default 1.0, the whole trial length). The best peak
  rate depends on the horizon of the schedule (a cosine run half as long favours a higher
  peak rate: it has fewer steps to spend a small one on), so a calibration shorter than the
  trials chooses for a different run than the one it serves; and the trials themselves are
  short. Measured on the cpu-xs Transformer (8 layers, 200 steps x 16 x 128 tokens, shakespeare,
  2 trials at a time; `tlmsearch search --preset cpu-xs --model n_layers=8 --steps 200
  --batch-size 16 --trials 1 --baseline uniform --noise-seeds 0 --lr-calibration auto`): the 5
  calibration trials took 2,032 s of trial time, 19.5 min of wall time, on 2 cores shared with
  a benchmark (load ~10); the one that ran alone took 124-173 s. In the reference study's own
  conditions (its verify trials: a median 60 s) that is about 5 x 60 s = 5 min of trial time
  against 2.1 h for the architecture's search and verification: ~4 %. The same run chose 4e-3
  over the configured 2e-3 (val_loss 2.229 vs 2.390; 8e-3: 2.326, 1e-3: 2.594, 5e-4: 2.951),
  a gap 5-10x the seed-to-seed sd of such trials (0.014-0.036 nats in the reference study).
  A shorter fraction is there for long trials.
- **Paired seeds** (`lr_calibration_seeds`, default 3): every rate trains the same seeds
  `seed, seed+1, ...`, so the differences between rates are paired (a seed's data order and
  initialisation are shared). One seed per rate (the rule before seeds existed) chose by noise:
  in the committed calibrations the best rate beat the runner-up by 0.28-1.16 sd of a single-run
  difference. bench/README.md ("learning-rate rule") measures the rule on planted optima.
- **Defaults**: on ("auto") in a study, which is what delivers verdicts per architecture, and
  each architecture's search calibrates its own rate; off in a bare `search` (and in
  `SearchConfig`), which is the study's building block and the quick look at a space: it keeps
  the rate it is given unless asked (`--lr-calibration auto`), so the K extra trials are never
  a surprise there and a config file or an existing run keeps meaning what it meant. A run
  directory or study written before calibration existed reads as "off" (none ran). On the
  command line an explicit `--lr` turns the calibration off unless `--lr-calibration` is given
  too (`after_explicit_lr`): a person who names a rate means it.
- **The choice** (`configs.lr_rule`): each rate's mean final `val_loss` over the seeds (a
  rate with a diverged or failed seed counts as worst), the lowest mean (equal means: the lower
  rate, the safer one when training gets longer), refined by the vertex of the parabola in
  log2(rate) through that mean and its two neighbours (within half a grid step of it; the best
  rate itself at an edge, or with one seed), rounded to 3 significant digits; its uncertainty a
  95% paired-bootstrap interval over the seeds. `lr_calibration.json` holds every run's loss,
  each rate's mean and sd, each rate's paired difference from the best, the chosen rate and its
  interval; `status`, the study and ladder reports show the rate with its interval.
- **Widening** (`calibrate`): when the best mean is the lowest or the highest rate of the grid,
  the optimum may lie outside it, so the rate one factor-2 step beyond that edge is trained with
  the same seeds, again until the best mean is inside the grid, at most `MAX_WIDEN` rates
  (a factor 16 beyond the configured grid); a best rate still at an edge then prints a warning
  line. Widening stops once a later phase trained (the rate those runs used stays). When every
  rate failed, the configured rate is kept and a warning says so.
- **The length**: where the profiles are decided. A ladder's point calibrates at the point's
  length (20 tokens per parameter for the reference ladder), which is the length its
  verification decides at.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

from tlmsearch.configs.lr_rule import (
    DRAWS,
    best_index,
    bootstrap_interval,
    chosen_log2,
    mean_sd,
    paired_differences,
    residual_sd,
    rounded_rate,
)
from tlmsearch.errors import ConfigError

AUTO, OFF = "auto", "off"
AUTO_FACTORS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)
MIN_RATES = 4  # a grid of fewer rates cannot bracket an optimum and say which side it lies on
MAX_RATES = 16
DEFAULT_SEEDS = 3  # paired seeds per rate: the fewest that give each rate a spread and the choice an interval
MAX_SEEDS = 16
WIDEN_FACTOR = 2.0  # a best mean at an edge adds the rate one factor-2 step beyond it
MAX_WIDEN = 4  # rates widening may add in all (a factor 16 beyond the configured grid)
SETTING_HELP = (
    "learning-rate calibration before the noise floor and the search: uniform trained with lr_calibration_seeds "
    "paired seeds at each rate; the rate of the lowest mean final val_loss, refined by a parabola in log2 rate, "
    "becomes train.lr of every later trial (a best mean at an edge widens the grid by factor-2 steps, at most 4); "
    "auto = lr x 1/4, 1/2, 1, 2, 4; off; or >= 4 comma-separated rates (e.g. 5e-4,1e-3,2e-3,4e-3). On the command "
    "line an explicit --lr turns it off unless --lr-calibration is given too"
)
SEEDS_HELP = (
    "paired seeds per rate of the learning-rate calibration (the same seeds at every rate; >= 2 gives each rate a "
    "spread and the chosen rate a bootstrap interval; 1 = one run per rate, no interval)"
)
FRACTION_HELP = "length of each learning-rate calibration trial as a fraction of train.steps (0 < f <= 1)"


def _format(rate: float) -> str:
    return format(rate, ".6g")


def parse_setting(text: str, field: str = "lr_calibration") -> str:
    """The canonical text of a calibration setting: "auto", "off", or the rates ascending, comma
    separated; a `ConfigError` naming `field` and what is allowed otherwise."""
    if not isinstance(text, str):
        raise ConfigError(f"{field}={text!r} must be auto, off or comma-separated rates")
    clean = text.strip().lower()
    if clean in (AUTO, OFF):
        return clean
    allowed = f"auto, off or at least {MIN_RATES} comma-separated positive rates, e.g. 5e-4,1e-3,2e-3,4e-3"
    try:
        rates = [float(item) for item in clean.split(",")]
    except ValueError:
        raise ConfigError(f"{field}={text!r} is not allowed; use {allowed}") from None
    if any(not (math.isfinite(r) and r > 0) for r in rates):
        raise ConfigError(f"{field}={text!r}: every rate must be positive and finite; use {allowed}")
    distinct = sorted({float(_format(r)) for r in rates})
    if len(distinct) < MIN_RATES:
        raise ConfigError(f"{field}={text!r} names {len(distinct)} distinct rate(s); use {allowed}")
    if len(distinct) > MAX_RATES:
        raise ConfigError(f"{field}={text!r} names {len(distinct)} rates; at most {MAX_RATES}")
    return ",".join(_format(r) for r in distinct)


def grid(setting: str, lr: float) -> tuple[float, ...]:
    """The rates a setting trains around the configured `lr` (ascending; () when off)."""
    setting = parse_setting(setting)
    if setting == OFF:
        return ()
    if setting == AUTO:
        return tuple(float(_format(lr * f)) for f in AUTO_FACTORS)
    return tuple(float(r) for r in setting.split(","))


def resolved_setting(setting: str, lr: float) -> str:
    """`setting` with "auto" written out as its explicit rates around `lr` (what a run stores)."""
    rates = grid(setting, lr)
    return ",".join(_format(r) for r in rates) if rates else OFF


def after_explicit_lr(setting: str, lr_given: bool, setting_given: bool) -> str:
    """The command line's rule: a learning rate given explicitly (--lr, or --train lr=) turns the
    calibration off, unless --lr-calibration is given too (then the grid centres on that rate)."""
    return OFF if lr_given and not setting_given else setting


def check_seeds(seeds: int, field: str = "lr_calibration_seeds") -> None:
    """Refuse a seed count outside 1..MAX_SEEDS in one line."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        raise ConfigError(
            f"{field}={seeds!r} must be an integer from 1 to {MAX_SEEDS} (paired seeds per rate; {DEFAULT_SEEDS} "
            "by default: >= 2 for a spread and an interval)"
        )


def calibration_steps(steps: int, fraction: float) -> int:
    """Steps of one calibration trial: `fraction` of the trial length, at least 1."""
    return max(1, min(steps, round(steps * fraction)))


def same_rate(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=0.0)


def choose_rate(rates: Sequence[float], losses: Sequence[float]) -> int | None:
    """The index of the best rate of one seed each: the lowest finite loss (a non-finite one, a
    diverged or failed rate, counts as worst), equal losses going to the lower rate; None when no
    loss is finite (`lr_rule.best_index` over means of one seed)."""
    return best_index(rates, [v if math.isfinite(v) else math.inf for v in losses])


def widened_rate(rates: Sequence[float], edge: str) -> float:
    """The next rate beyond the grid's `edge` ("lowest" / "highest"): one factor-2 step further."""
    rate = rates[0] / WIDEN_FACTOR if edge == "lowest" else rates[-1] * WIDEN_FACTOR
    return float(_format(rate))


@dataclasses.dataclass(frozen=True)
class LrCalibration:
    """A search's learning-rate calibration so far: `rates` (ascending, the configured grid and
    the rates widening added, `added`), `seeds` (the same at every rate), the final `val_loss`
    of each (rate, seed) (`losses[i][k]`; nan: not trained yet, diverged or failed; `trained`
    says which ended), the configured rate it was centred on, and the trial length. `widen_left`:
    how many more rates widening may still add (0 once the limit is reached, or once a later phase
    trained at the rate: then it stays)."""

    rates: tuple[float, ...]
    seeds: tuple[int, ...]
    losses: tuple[tuple[float, ...], ...]
    trained: tuple[tuple[bool, ...], ...]
    configured: float
    steps: int
    reasons: tuple[tuple[str | None, ...], ...] = ()
    added: tuple[float, ...] = ()
    widen_left: int = 0
    metric: str = "val_loss"
    profile: str = "uniform"

    @property
    def complete(self) -> bool:
        return all(all(row) for row in self.trained)

    @property
    def trained_runs(self) -> int:
        return sum(sum(row) for row in self.trained)

    @property
    def means(self) -> tuple[float, ...]:
        """Each rate's mean over the seeds (+inf when a seed diverged or failed; nan until all trained)."""
        return tuple(
            mean_sd(row)[0] if all(done) else math.nan for row, done in zip(self.losses, self.trained, strict=True)
        )

    @property
    def sds(self) -> tuple[float, ...]:
        """Each rate's sd over the seeds (nan with one seed, or a non-finite loss)."""
        return tuple(mean_sd(row)[1] for row in self.losses)

    @property
    def best_index(self) -> int | None:
        """The index of the rate of the lowest mean (None until complete, or when every rate failed)."""
        return best_index(self.rates, self.means) if self.complete else None

    @property
    def chosen(self) -> float | None:
        """The chosen rate (`lr_rule.chosen_log2`: the best mean refined by the parabola in log2
        rate through it and its neighbours; the best rate itself with one seed or at an edge);
        None until every rate is trained, or when every rate failed."""
        if not self.complete:
            return None
        x = chosen_log2(self.rates, self.means, len(self.seeds))
        if x is None:
            return None
        b = self.best_index
        if b is not None and math.isclose(x, math.log2(self.rates[b]), abs_tol=1e-12):
            return self.rates[b]
        return rounded_rate(x)

    @property
    def interval(self) -> tuple[float, float] | None:
        """The chosen rate's 95% paired-bootstrap interval over the seeds (None with one seed or before the choice)."""
        if self.chosen is None or len(self.seeds) < 2:
            return None
        return bootstrap_interval(self.rates, self.losses)

    @property
    def missing(self) -> list[tuple[float, int]]:
        """The (rate, seed) runs not recorded yet, rate by rate."""
        return [
            (rate, seed)
            for rate, done in zip(self.rates, self.trained, strict=True)
            for seed, ok in zip(self.seeds, done, strict=True)
            if not ok
        ]

    @property
    def rate(self) -> float:
        """The rate later trials train at: the chosen one, else the configured one."""
        chosen = self.chosen
        return self.configured if chosen is None else chosen

    @property
    def edge(self) -> str | None:
        """ "lowest" / "highest" when the best mean is at that end of the grid, else None."""
        i = self.best_index
        if i is None:
            return None
        return "lowest" if i == 0 else "highest" if i == len(self.rates) - 1 else None

    @property
    def widening(self) -> float | None:
        """The rate widening trains next: one step beyond the edge the best mean sits at, while
        the limit allows (None otherwise)."""
        edge = self.edge
        return widened_rate(self.rates, edge) if edge is not None and self.widen_left > 0 else None

    def warnings(self) -> list[str]:
        """Warning lines: the best rate at an edge of the grid after widening, or no rate with a finite loss."""
        out = []
        if self.complete and self.chosen is None:
            out.append(
                f"warning: learning-rate calibration: no rate of {self.grid_text()} reached a finite {self.metric}; "
                f"the trials keep the configured rate {_format(self.configured)}"
            )
        edge = self.edge
        if edge is not None and self.widen_left == 0:
            beyond = "lower" if edge == "lowest" else "higher"
            added = f" after widening it by {len(self.added)} rate(s)" if self.added else ""
            out.append(
                f"warning: learning-rate calibration: the best rate {_format(self.rate)} is the {edge} of the grid "
                f"({self.grid_text()}){added}; a {beyond} rate may be better: widen it with "
                "--lr-calibration RATE,RATE,..."
            )
        return out

    def grid_text(self) -> str:
        return ", ".join(_format(r) for r in self.rates)

    def interval_text(self) -> str:
        """ "95% interval 0.0021-0.0037 (bootstrap, 3 seeds, 8 df)", or why there is none."""
        if len(self.seeds) < 2:
            return "no interval: one seed per rate"
        interval = self.interval
        if interval is None:
            return "no interval"
        lo, hi = interval
        return f"95% interval {lo:.3g}-{hi:.3g} (bootstrap, {len(self.seeds)} seeds, {residual_sd(self.losses)[1]} df)"

    def loss_texts(self) -> list[str]:
        """One "rate: mean +- sd" text per rate ("diverged", "failed" or "pending" without a
        loss; a plain loss with one seed); the best mean says so ("0.002 (best): 2.3456 +- 0.0100")."""
        out = []
        best = self.best_index
        for i, rate in enumerate(self.rates):
            row, done = self.losses[i], self.trained[i]
            reasons = self.reasons[i] if i < len(self.reasons) else ()
            if not all(done):
                value = "pending" if not any(done) else f"{sum(done)} of {len(done)} seeds"
            elif all(math.isfinite(v) for v in row):
                m, sd = mean_sd(row)
                value = f"{m:.4f}" if len(row) < 2 else f"{m:.4f} +- {sd:.4f}"
            else:
                value = "diverged" if any(r and "diverged" in r for r in reasons) else "failed"
            tag = (" (chosen)" if len(self.seeds) < 2 else " (best)") if i == best else ""
            out.append(f"{_format(rate)}{tag}: {value}")
        return out

    def seeds_text(self) -> str:
        n = len(self.seeds)
        if n == 1:
            return f"seed {self.seeds[0]}"
        return f"{n} paired seeds {self.seeds[0]}-{self.seeds[-1]}"

    def describe(self) -> str:
        """One line: the grid's means and spreads, the chosen rate with its interval (or how far the calibration is)."""
        losses = ", ".join(self.loss_texts())
        stat = f"{self.metric} by rate" if len(self.seeds) < 2 else f"mean {self.metric} +- sd over seeds by rate"
        head = f"learning-rate calibration ({self.profile}, {self.steps} steps, {self.seeds_text()}; {stat}): {losses}"
        if self.added:
            head += f"; widened by {', '.join(_format(r) for r in self.added)}"
        if not self.complete:
            runs = len(self.rates) * len(self.seeds)
            return f"{head}; {self.trained_runs} of {runs} runs trained so far"
        if self.chosen is None:
            return f"{head}; no rate usable, keeping {_format(self.configured)}"
        fitted = len(self.seeds) >= 2 and not self.edge
        how = ", parabola in log2 rate through the best mean and its neighbours" if fitted else ""
        return (
            f"{head}; chosen {_format(self.rate)} ({self.interval_text()}{how}; configured {_format(self.configured)})"
        )

    def to_dict(self) -> dict[str, Any]:
        best = self.best_index
        pairs = paired_differences(self.losses, best) if best is not None else []
        interval = self.interval
        return {
            "metric": self.metric,
            "profile": self.profile,
            "steps": self.steps,
            "configured": self.configured,
            "rates": list(self.rates),
            "seeds": list(self.seeds),
            "losses": [[_num(v) for v in row] for row in self.losses],
            "means": [_num(v) for v in self.means],
            "sds": [_num(v) for v in self.sds],
            "paired_vs_best": [{"mean": _num(m), "sd": _num(sd)} for m, sd in pairs],
            "trained": [list(row) for row in self.trained],
            "reasons": [list(row) for row in self.reasons],
            "added": list(self.added),
            "complete": self.complete,
            "best": self.rates[best] if best is not None else None,
            "chosen": self.chosen,
            "interval": list(interval) if interval is not None else None,
            "rate": self.rate,
            "edge": self.edge,
            "warnings": self.warnings(),
            "rule": RULE,
        }


Run = tuple[bool, float, "str | None"]  # one (rate, seed) run: recorded?, its final loss (nan: none), why it failed


def calibrate(
    grid_rates: Sequence[float],
    seeds: Sequence[int],
    runs: Callable[[float, int], Run],
    *,
    configured: float,
    steps: int,
    widen: int = MAX_WIDEN,
) -> LrCalibration:
    """The calibration of `grid_rates` x `seeds`, widened as far as the runs say: while every
    run of the grid is recorded and the best mean lies at an edge, the rate one factor-2 step
    beyond that edge joins the grid, at most `widen` rates (and `MAX_RATES` in all). `runs(rate,
    seed)` says what is recorded of one run, so the grid is a function of the runs: a resume
    rebuilds the same grid and trains only the runs it lacks (`LrCalibration.missing`)."""
    rates = tuple(grid_rates)
    while True:
        left = max(0, min(widen - (len(rates) - len(grid_rates)), MAX_RATES - len(rates)))
        found = [[runs(rate, seed) for seed in seeds] for rate in rates]
        calibration = LrCalibration(
            rates=rates,
            seeds=tuple(seeds),
            losses=tuple(tuple(loss for _, loss, _ in row) for row in found),
            trained=tuple(tuple(done for done, _, _ in row) for row in found),
            configured=configured,
            steps=steps,
            reasons=tuple(tuple(why for _, _, why in row) for row in found),
            added=rates[: rates.index(grid_rates[0])] + rates[rates.index(grid_rates[-1]) + 1 :],
            widen_left=left,
        )
        nxt = calibration.widening
        if nxt is None:
            return calibration
        rates = tuple(sorted((*rates, nxt)))


RULE = (
    "mean final val_loss over paired seeds per rate (diverged or failed counts as worst; equal means: the lower "
    "rate); with >= 2 seeds the vertex of the parabola in log2 rate through the best mean and its neighbours "
    f"(the best rate itself at an edge); 95% interval: that choice on {DRAWS} parametric bootstrap draws of the "
    "means, their sd from the rate + seed residuals; a best mean at an edge widens the grid by a "
    f"factor-{WIDEN_FACTOR:g} step, at most {MAX_WIDEN} times"
)


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def short_text(data: dict[str, Any] | None) -> str:
    """A calibration's `to_dict` in a few words for tables: "0.00283 [0.0021, 0.0037] of
    5e-4..8e-3, 3 seeds (edge: highest)"; a file written before seeds existed reads as one seed."""
    if not data:
        return "-"
    rates = data.get("rates") or []
    span = f"{_format(rates[0])}..{_format(rates[-1])}" if rates else "?"
    if not data.get("complete"):
        trained = data.get("trained") or []
        runs = sum(sum(bool(t) for t in row) if isinstance(row, list) else bool(row) for row in trained)
        return f"calibrating ({runs} runs of {span})"
    if data.get("chosen") is None:
        return f"{_format(float(data.get('rate') or 0))} (no rate of {span} usable)"
    seeds = data.get("seeds") or [None]
    interval = data.get("interval")
    where = f" [{_format(interval[0])}, {_format(interval[1])}]" if interval else ""
    edge = f", at the {data['edge']} edge" if data.get("edge") else ""
    return f"{_format(float(data['chosen']))}{where} of {span}, {len(seeds)} seed{'s' * (len(seeds) != 1)}{edge}"
