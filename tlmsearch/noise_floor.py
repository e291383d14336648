"""The search's noise floor: the seed-to-seed spread of the objective at trial fidelity (pure).

A search ranks profiles by one short trial each, all at one training seed. Before its trials,
the search trains the uniform baseline with `noise_seeds` training seeds at exactly the trial
fidelity (same steps, never stopped early); the sample standard deviation of their final
`val_loss` is the floor: how far one trial's score moves when only the seed changes.

Differences between search-time scores are shown in units of it ("+0.012 nats = 0.8 sd"),
and two search-time scores are called a **tie** when their gap is below `TIE_SDS * sqrt(2)`
floor sds (2.83 sd):

- each score is one seed's draw, so the gap of two independent single-seed scores has a
  standard deviation of `sqrt(2) * sd`;
- a gap under two of those standard deviations is what seed noise alone produces about 95%
  of the time (two-sided, normal), so such a gap ranks nothing.

The rule is a display rule, not a test: the sd comes from a handful of seeds (with 3 seeds
its own 95% interval runs from about 0.52x to 6.3x the estimate), and trials of one search
share their seed (data order and, with keyed initialisation, the tensors of equal shape), which
may make their gaps less noisy than two independent seeds. `verify` is what decides, with fresh
paired seeds.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

# a gap below TIE_SDS standard deviations of the difference of two single-seed scores is a tie
TIE_SDS = 2.0
TIE_RULE = "gap < 2 x sqrt(2) x sd (two single-seed scores differ by seed noise alone about 95% of the time)"


def floor_sd(values: Sequence[float]) -> float:
    """The sample standard deviation of `values` (nan for fewer than two finite values)."""
    finite = [float(v) for v in values if math.isfinite(v)]
    return statistics.stdev(finite) if len(finite) >= 2 else math.nan


def tie_gap(sd: float) -> float:
    """The smallest gap between two single-seed scores that is not a tie: `TIE_SDS * sqrt(2) * sd`."""
    return TIE_SDS * math.sqrt(2.0) * sd


def in_sd(gap: float, sd: float) -> float:
    """`gap` in units of the floor (nan without a positive, finite floor)."""
    return gap / sd if math.isfinite(sd) and sd > 0 else math.nan


def is_tie(gap: float, sd: float) -> bool | None:
    """True when `|gap|` is inside the floor (`tie_gap`), None without a usable floor."""
    if not (math.isfinite(sd) and sd > 0 and math.isfinite(gap)):
        return None
    return abs(gap) < tie_gap(sd)


def describe_gap(gap: float, sd: float, unit: str = "nats") -> str:
    """E.g. "+0.012 nats = 0.8 sd" (just the gap without a usable floor)."""
    text = f"{gap:+.4f} {unit}"
    ratio = in_sd(gap, sd)
    return text if math.isnan(ratio) else f"{text} = {ratio:.1f} sd"


@dataclasses.dataclass(frozen=True)
class NoiseFloor:
    """The seed-to-seed spread of a search's objective, measured on the uniform baseline.

    `seeds`/`values`: the training seeds measured so far and their final metric; `planned`:
    how many seeds the search asked for (`SearchConfig.noise_seeds`); `steps`: the trial
    fidelity they trained at.
    """

    seeds: tuple[int, ...]
    values: tuple[float, ...]
    planned: int
    steps: int
    metric: str = "val_loss"
    profile: str = "uniform"

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def sd(self) -> float:
        return floor_sd(self.values)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values) if self.values else math.nan

    @property
    def complete(self) -> bool:
        return self.n >= self.planned

    @property
    def usable(self) -> bool:
        """At least two seeds and a positive spread: gaps can be put in its units."""
        return self.n >= 2 and math.isfinite(self.sd) and self.sd > 0

    @property
    def tie_gap(self) -> float:
        return tie_gap(self.sd) if self.usable else math.nan

    def describe(self) -> str:
        """One line: the floor, its seeds and the tie rule (or what is still missing)."""
        seeds = ", ".join(str(s) for s in self.seeds)
        if not self.usable:
            return (
                f"noise floor: {self.n} of {self.planned} seeds of {self.profile} measured so far"
                + (f" (seeds {seeds})" if self.seeds else "")
                + "; gaps are not put in its units yet"
            )
        partial = "" if self.complete else f" ({self.n} of {self.planned} planned so far)"
        return (
            f"noise floor: sd {self.sd:.4f} nats of {self.metric} over {self.n} seeds of {self.profile} "
            f"(seeds {seeds}) at {self.steps} steps{partial}; search-time gaps under "
            f"{self.tie_gap:.4f} nats ({TIE_SDS:g} x sqrt(2) sd) are ties"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "profile": self.profile,
            "steps": self.steps,
            "planned": self.planned,
            "n": self.n,
            "seeds": list(self.seeds),
            "values": list(self.values),
            "mean": _num(self.mean),
            "sd": _num(self.sd),
            "tie_gap": _num(self.tie_gap),
            "tie_rule": TIE_RULE,
            "complete": self.complete,
        }


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def ranking_gaps(values: Sequence[float], sd: float) -> list[dict[str, Any]]:
    """For scores sorted best first (lower is better): each one's gap to the best, that gap in
    floor units, and whether it ties with the best (`is_tie`; None without a usable floor)."""
    if not values:
        return []
    best = values[0]
    out = []
    for v in values:
        gap = v - best
        out.append({"gap": gap, "gap_sd": _num(in_sd(gap, sd)), "tie": is_tie(gap, sd)})
    return out


# a screen of fewer full-fidelity trials than this is too small to say it separates nothing
MIN_SCREEN = 3


def screen_ties(values: Sequence[float], sd: float) -> dict[str, Any] | None:
    """When a screen separates nothing: at least `MIN_SCREEN` finite full-fidelity scores, and the
    worst of them ties with the best (`is_tie`: every gap inside the floor). Returns the count,
    the spread (worst - best, nats) and the tie gap; None when some score stands apart, with too
    few scores, or without a usable floor. Such a search's ranking is seed noise at its fidelity:
    a model still on its first plateau (every profile the same loss) is the common cause."""
    finite = sorted(float(v) for v in values if math.isfinite(v))
    if len(finite) < MIN_SCREEN or is_tie(finite[-1] - finite[0], sd) is not True:
        return None
    return {"trials": len(finite), "spread": finite[-1] - finite[0], "tie_gap": tie_gap(sd)}


def screen_text(ties: Mapping[str, Any]) -> str:
    """`screen_ties` in words (`tlmsearch status`)."""
    return (
        f"screen: all {ties['trials']} full-fidelity trials lie within {ties['spread']:.4f} nats of each other, "
        f"inside the floor's tie gap ({ties['tie_gap']:.4f}): at this fidelity the search ranks none above "
        "another; a longer screen (--tokens-per-param) or verify's fresh seeds decide"
    )


# ----------------------------------------------------------------------------- the rule in words
# One wording of the floor and of a gap, used by `tlmsearch status`, summary.md, the report's
# best-trials table and the ranking figure's band, so that none of them calls a tie what another
# does not.


def gap_text(row: Mapping[str, Any]) -> str:
    """A ranking row's gap to the best (`ranking_gaps`): "best", "+0.0120 nats = 0.8 sd (tie)",
    "+0.0120 nats" without a usable floor, "-" without a score."""
    gap = row.get("gap")
    if gap is None or not math.isfinite(gap):
        return "-"
    if gap == 0:
        return "best"
    sd = row.get("gap_sd")
    return f"{gap:+.4f} nats" + (f" = {sd:.1f} sd" if sd is not None else "") + (" (tie)" if row.get("tie") else "")


def floor_text(floor: Mapping[str, Any] | None) -> str:
    """The floor (`NoiseFloor.to_dict()`, None when the search measured none) and its tie rule."""
    if floor is None:
        return "noise floor: not measured (noise_seeds 0): each search-time score is one seed's; gaps are not ranked"
    seeds = ", ".join(str(s) for s in floor["seeds"])
    if floor.get("sd") is None:
        have = f" (seeds {seeds})" if seeds else ""
        return f"noise floor: {floor['n']} of {floor['planned']} seeds of uniform finished so far{have}; no spread yet"
    partial = "" if floor["complete"] else f", {floor['n']} of {floor['planned']} so far"
    return (
        f"noise floor: sd {floor['sd']:.4f} nats over {floor['n']} seeds of uniform (seeds {seeds}{partial}) at "
        f"{floor['steps']} steps; a gap to the best under {floor['tie_gap']:.4f} nats (2 x sqrt(2) sd) is a tie"
    )
