"""Learning-rate calibration: the rate every trial of a search trains at, chosen on uniform (pure).

One learning rate for every architecture confounds the question: a width profile can win
because it tolerates a rate that is wrong for the architecture, not because it spends the
budget better. So, before its noise floor and its trials, a search may train the uniform
profile once at each rate of a grid and take the rate of the lowest final `val_loss` as
`TrainConfig.lr` of every later trial of that search (noise floor, search trials, and the
verification that re-trains them: the run's `search.yaml` holds it).

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
- **One seed** (the search's): near the best rate the loss is flat, so which of two
  neighbouring rates wins by seed noise costs little; what the calibration must catch is a
  rate 2-4x off, whose loss gap is far above the seed-to-seed spread.
- **Defaults**: on ("auto") in a study, which is what delivers verdicts per architecture, and
  each architecture's search calibrates its own rate; off in a bare `search` (and in
  `SearchConfig`), which is the study's building block and the quick look at a space: it keeps
  the rate it is given unless asked (`--lr-calibration auto`), so the K extra trials are never
  a surprise there and a config file or an existing run keeps meaning what it meant. A run
  directory or study written before calibration existed reads as "off" (none ran). On the
  command line an explicit `--lr` turns the calibration off unless `--lr-calibration` is given
  too (`after_explicit_lr`): a person who names a rate means it.
- **The choice** (`choose_rate`): the lowest finite final `val_loss`; a rate that diverged or
  failed (no finite loss) counts as worst; equal losses go to the lower rate (the safer one
  when training gets longer). When every rate failed, the configured rate is kept and a
  warning says so. When the best rate is the lowest or the highest of the grid, the optimum
  may lie outside it, and a warning line says so and how to widen the grid.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from tlmsearch.errors import ConfigError

AUTO, OFF = "auto", "off"
AUTO_FACTORS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)
MIN_RATES = 4  # a grid of fewer rates cannot bracket an optimum and say which side it lies on
MAX_RATES = 16
SETTING_HELP = (
    "learning-rate calibration before the noise floor and the search: uniform trained once at each rate, the "
    "lowest final val_loss becomes train.lr of every later trial; auto = lr x 1/4, 1/2, 1, 2, 4; off; or >= 4 "
    "comma-separated rates (e.g. 5e-4,1e-3,2e-3,4e-3). On the command line an explicit --lr turns it off "
    "unless --lr-calibration is given too"
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


def calibration_steps(steps: int, fraction: float) -> int:
    """Steps of one calibration trial: `fraction` of the trial length, at least 1."""
    return max(1, min(steps, round(steps * fraction)))


def same_rate(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=0.0)


def choose_rate(rates: Sequence[float], losses: Sequence[float]) -> int | None:
    """The index of the chosen rate: the lowest finite loss (a non-finite one, a diverged or
    failed rate, counts as worst), equal losses going to the lower rate; None when no loss is finite."""
    best: int | None = None
    for i, (rate, loss) in enumerate(zip(rates, losses, strict=True)):
        if not math.isfinite(loss):
            continue
        if best is None or loss < losses[best] or (loss == losses[best] and rate < rates[best]):
            best = i
    return best


@dataclasses.dataclass(frozen=True)
class LrCalibration:
    """A search's learning-rate calibration so far: `rates` (ascending) and the final
    `val_loss` of each (nan: not trained yet, diverged or failed; `failed` says which ended
    without one), the configured rate it was centred on, and the trial length."""

    rates: tuple[float, ...]
    losses: tuple[float, ...]
    trained: tuple[bool, ...]
    configured: float
    steps: int
    reasons: tuple[str | None, ...] = ()
    metric: str = "val_loss"
    profile: str = "uniform"

    @property
    def complete(self) -> bool:
        return all(self.trained)

    @property
    def chosen_index(self) -> int | None:
        return choose_rate(self.rates, self.losses) if self.complete else None

    @property
    def chosen(self) -> float | None:
        """The chosen rate (None until every rate is trained, or when every rate failed)."""
        i = self.chosen_index
        return None if i is None else self.rates[i]

    @property
    def rate(self) -> float:
        """The rate later trials train at: the chosen one, else the configured one."""
        chosen = self.chosen
        return self.configured if chosen is None else chosen

    @property
    def edge(self) -> str | None:
        """ "lowest" / "highest" when the chosen rate is at that end of the grid, else None."""
        i = self.chosen_index
        if i is None:
            return None
        return "lowest" if i == 0 else "highest" if i == len(self.rates) - 1 else None

    def warnings(self) -> list[str]:
        """Warning lines: the best rate at an edge of the grid, or no rate with a finite loss."""
        out = []
        if self.complete and self.chosen is None:
            out.append(
                f"warning: learning-rate calibration: no rate of {self.grid_text()} reached a finite {self.metric}; "
                f"the trials keep the configured rate {_format(self.configured)}"
            )
        edge = self.edge
        if edge is not None:
            beyond = "lower" if edge == "lowest" else "higher"
            out.append(
                f"warning: learning-rate calibration: the best rate {_format(self.rate)} is the {edge} of the grid "
                f"({self.grid_text()}); a {beyond} rate may be better: widen it with --lr-calibration RATE,RATE,..."
            )
        return out

    def grid_text(self) -> str:
        return ", ".join(_format(r) for r in self.rates)

    def loss_texts(self) -> list[str]:
        """One "rate: loss" text per rate ("diverged", "failed" or "pending" without a loss); the
        chosen rate says so ("0.002 (chosen): 2.3456")."""
        out = []
        for i, (rate, loss, done) in enumerate(zip(self.rates, self.losses, self.trained, strict=True)):
            reason = self.reasons[i] if i < len(self.reasons) else None
            if math.isfinite(loss):
                value = f"{loss:.4f}"
            elif not done:
                value = "pending"
            else:
                value = "diverged" if reason and "diverged" in reason else "failed"
            out.append(f"{_format(rate)}{' (chosen)' if i == self.chosen_index else ''}: {value}")
        return out

    def describe(self) -> str:
        """One line: the grid's losses and the chosen rate (or how far the calibration is)."""
        losses = ", ".join(self.loss_texts())
        head = f"learning-rate calibration ({self.profile}, {self.steps} steps; {self.metric} by rate): {losses}"
        if not self.complete:
            return f"{head}; {sum(self.trained)} of {len(self.rates)} rates trained so far"
        if self.chosen is None:
            return f"{head}; no rate usable, keeping {_format(self.configured)}"
        return f"{head}; chosen {_format(self.rate)} (configured {_format(self.configured)})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "profile": self.profile,
            "steps": self.steps,
            "configured": self.configured,
            "rates": list(self.rates),
            "losses": [_num(v) for v in self.losses],
            "trained": list(self.trained),
            "reasons": list(self.reasons),
            "complete": self.complete,
            "chosen": self.chosen,
            "rate": self.rate,
            "edge": self.edge,
            "warnings": self.warnings(),
            "rule": "lowest final val_loss; diverged or failed counts as worst; equal losses: the lower rate",
        }


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def short_text(data: dict[str, Any] | None) -> str:
    """A calibration's `to_dict` in a few words for tables: "2e-3 of 5e-4..8e-3 (edge: highest)"."""
    if not data:
        return "-"
    rates = data.get("rates") or []
    span = f"{_format(rates[0])}..{_format(rates[-1])}" if rates else "?"
    if not data.get("complete"):
        return f"calibrating ({sum(bool(t) for t in data.get('trained') or [])}/{len(rates)} of {span})"
    if data.get("chosen") is None:
        return f"{_format(float(data.get('rate') or 0))} (no rate of {span} usable)"
    edge = f", at the {data['edge']} edge" if data.get("edge") else ""
    return f"{_format(float(data['chosen']))} of {span}{edge}"
