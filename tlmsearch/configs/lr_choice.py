"""A learning-rate calibration's state and choice (pure): `LrCalibration` (its grid, seeds, each
run's loss, the chosen rate and its interval, how it reads in lines and in `lr_calibration.json`)
and `calibrate` (the grid widened as the runs say). The settings are `configs.lr_calibration`'s,
the statistics `configs.lr_rule`'s.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

from tlmsearch.configs.lr_calibration import MAX_RATES, MAX_WIDEN, WIDEN_FACTOR
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
from tlmsearch.core.words import plural


def _format(rate: float) -> str:
    return format(rate, ".6g")


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
        return f"calibrating ({plural(runs, 'run')} of {span})"
    if data.get("chosen") is None:
        return f"{_format(float(data.get('rate') or 0))} (no rate of {span} usable)"
    seeds = data.get("seeds") or [None]
    interval = data.get("interval")
    where = f" [{_format(interval[0])}, {_format(interval[1])}]" if interval else ""
    edge = f", at the {data['edge']} edge" if data.get("edge") else ""
    return f"{_format(float(data['chosen']))}{where} of {span}, {len(seeds)} seed{'s' * (len(seeds) != 1)}{edge}"
