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
- **The length**: where the profiles are decided. Each calibration trial trains the search's
  trial length, or `SearchConfig.lr_calibration_tokens_per_param` tokens per parameter when
  set (a study sets its verification's, 20, for searches that screen at 5:
  `configs.resolve.calibration_train`), times `lr_calibration_fraction` (default 1.0). A
  ladder's point calibrates at the point's own length, the length its verification decides
  at. The best peak rate depends on the horizon of the schedule (a run half as long favours a
  higher peak rate), so a calibration shorter than the runs it serves chooses for another run;
  no transfer rule from a shorter length is assumed. Measured on the cpu-xs Transformer (8
  layers, 200 steps x 16 x 128 tokens, shakespeare, 2 trials at a time, one seed a rate): the
  5 calibration trials took 2,032 s of trial time on 2 shared cores; the one that ran alone
  took 124-173 s. A shorter fraction is there for long trials.
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
- **The choice** (`configs.lr_rule`, `configs.lr_choice`): each rate's mean final `val_loss` over the seeds (a
  rate with a diverged or failed seed counts as worst), the lowest mean (equal means: the lower
  rate, the safer one when training gets longer), refined by the vertex of the parabola in
  log2(rate) through that mean and its two neighbours (within half a grid step of it; the best
  rate itself at an edge, or with one seed), rounded to 3 significant digits; its uncertainty a
  95% interval from a bootstrap of the means at the seeds' measured spread. `lr_calibration.json`
  holds every run's loss, each rate's mean and sd, each rate's paired difference from the best,
  the chosen rate and its interval; `status`, the study and ladder reports show the rate with its interval.
- **Widening** (`lr_choice.calibrate`): when the best mean is the lowest or the highest rate of the grid,
  the optimum may lie outside it, so the rate one factor-2 step beyond that edge is trained with
  the same seeds, again until the best mean is inside the grid, at most `MAX_WIDEN` rates
  (a factor 16 beyond the configured grid); a best rate still at an edge then prints a warning
  line. Once a later phase trained, the grid keeps the rates it has and adds none (the rate
  those runs used stays). When every
  rate failed, the configured rate is kept and a warning says so.
"""

from __future__ import annotations

import math

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
