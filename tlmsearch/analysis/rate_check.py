"""Does a verified result depend on the learning rate? The rate check's decision (pure).

A width profile can beat cosine because it tolerates a rate that is wrong for the architecture,
not because it spends the budget better (issue 26, item 4; bench/README section 13 found the
only decided result at the reference shape held at 2e-3 and at neither 1e-3 nor 4e-3). So
`verify --rate-check N` re-trains cosine and the best candidate at half and twice the rate the
verification trained at (the run's calibrated rate, else the configured one), on N paired seeds;
at the base rate the pairs are the verification's own runs of the same seeds. All three rates
are compared on the same seeds, so each has the same power.

Per rate, the gap is loss(cosine) - loss(candidate) in nats (positive: the candidate is better;
it is the log of the perplexity ratio, so the relative gain is its expm1, as in the verdict),
with a two-sided t interval at 1 - alpha/3 (Bonferroni over the three rates, so every sign
claimed below, at any rate, is wrong at most alpha of the time in all):

- "better": the interval lies above 0; "worse": below 0; "undecided": it covers 0.

Across the three rates (`rate_outcome`):

- "holds" ("holds across rates"): decided the same way at every rate;
- "rate_sensitive": decided opposite ways at two rates (the sign "flips"), or decided at some
  rates and undecided at others (the verdict "changes": the result at one rate is not shown at
  another, which is no evidence that it is absent there either);
- "undecided": undecided at every rate: no evidence of a difference at any of them (never
  evidence of no difference);
- "incomplete": some rate has no paired seed yet (its runs are missing or failed).

`rate_checks(records, doc)` rebuilds the check from `verify.json`'s "rate_check" entry (written
by `tlmsearch.tuning.rate_check`: the seeds, the rates and the trial id of every run) and the
records, so `tlmsearch report` and `status` say what `verify` said.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tlmsearch.analysis.stats import Interval, mean_ci
from tlmsearch.analysis.verdict import COSINE, Verdict
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.records import as_records

FACTORS: tuple[float, ...] = (0.5, 1.0, 2.0)  # half, base and twice the rate
FACTOR_NAMES = {0.5: "half", 1.0: "base", 2.0: "twice"}
BETTER, WORSE, UNDECIDED = "better", "worse", "undecided"
HOLDS, RATE_SENSITIVE, INCOMPLETE = "holds", "rate_sensitive", "incomplete"
OUTCOMES = (HOLDS, RATE_SENSITIVE, UNDECIDED, INCOMPLETE)
OUTCOME_TEXT = {
    HOLDS: "holds across rates",
    RATE_SENSITIVE: "rate-sensitive",
    UNDECIDED: "undecided at every rate",
    INCOMPLETE: "incomplete",
}


def cell_decision(low: float, high: float) -> str:
    """ "better" (the interval of the gap lies above 0), "worse" (below 0) or "undecided"."""
    if low > 0.0:
        return BETTER
    if high < 0.0:
        return WORSE
    return UNDECIDED


def rate_outcome(decisions: Sequence[str | None]) -> tuple[str, str]:
    """(outcome, reason) from the decision at each rate (None: no paired seed there yet).

    Outcomes as in the module docstring; the reason is "better"/"worse" for "holds" (which side
    held), "flips" or "changes" for "rate_sensitive", "" otherwise.
    """
    if not decisions:
        raise ValueError("rate_outcome needs the decision of at least one rate")
    for d in decisions:
        if d not in (BETTER, WORSE, UNDECIDED, None):
            raise ValueError(f"unknown decision {d!r}: one of better, worse, undecided or None")
    if any(d is None for d in decisions):
        return INCOMPLETE, ""
    decided = {d for d in decisions if d != UNDECIDED}
    if not decided:
        return UNDECIDED, ""
    if decided == {BETTER, WORSE}:
        return RATE_SENSITIVE, "flips"
    if UNDECIDED in decisions:
        return RATE_SENSITIVE, "changes"
    return HOLDS, BETTER if BETTER in decided else WORSE


def check_confidence(alpha: float) -> float:
    """The two-sided level of each rate's interval: 1 - alpha / 3 (Bonferroni over the rates)."""
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha={alpha} must lie in (0, 0.5)")
    return 1.0 - alpha / len(FACTORS)


@dataclass(frozen=True)
class RateCell:
    """One rate: the paired gap loss(cosine) - loss(candidate) over the seeds both finished."""

    factor: float
    rate: float
    seeds: tuple[int, ...]  # the paired seeds (both runs finished)
    gap: Interval | None  # nats, positive: the candidate is better; None without a paired seed
    cosine_loss: float  # mean final val_loss over the paired seeds (nan without one)
    candidate_loss: float
    failed: int = 0  # runs of this rate that ended without a finite val_loss (diverged, failed)
    missing: int = 0  # runs of this rate not trained yet

    @property
    def n(self) -> int:
        return len(self.seeds)

    @property
    def decision(self) -> str | None:
        if self.gap is None or self.n < 2:
            return None  # one pair has no spread: nothing can be decided from it
        return cell_decision(self.gap.low, self.gap.high)

    @property
    def gain(self) -> Interval | None:
        """The gap as a relative perplexity gain of the candidate over cosine (as in the verdict)."""
        g = self.gap
        return None if g is None else Interval(math.expm1(g.estimate), _expm1(g.low), _expm1(g.high), g.n, g.confidence)

    @property
    def name(self) -> str:
        return FACTOR_NAMES.get(self.factor, f"x{self.factor:g}")

    def text(self) -> str:
        """E.g. "0.002 (half): better, +0.0210 nats [+0.0040, +0.0380] (+2.12%), 6 seeds"."""
        head = f"{self.rate:.6g} ({self.name})"
        if self.gap is None:
            return f"{head}: no paired seed yet{self._losses()}"
        g, gain = self.gap, self.gain
        assert gain is not None
        decision = self.decision or "one seed, undecided"
        return (
            f"{head}: {decision}, {g.estimate:+.4f} nats [{_num(g.low)}, {_num(g.high)}] "
            f"({gain.estimate:+.2%}), {self.n} seed{'s' if self.n != 1 else ''}{self._losses()}"
        )

    def _losses(self) -> str:
        parts = []
        if self.failed:
            parts.append(f"{self.failed} run{'s' if self.failed != 1 else ''} diverged or failed")
        if self.missing:
            parts.append(f"{self.missing} not trained yet")
        return f" ({'; '.join(parts)})" if parts else ""

    def to_dict(self) -> dict[str, Any]:
        gain = self.gain
        return {
            "factor": self.factor,
            "rate": self.rate,
            "name": self.name,
            "seeds": list(self.seeds),
            "n": self.n,
            "gap_nats": _plain(self.gap),
            "gain": _plain(gain),
            "cosine_loss": _finite(self.cosine_loss),
            "candidate_loss": _finite(self.candidate_loss),
            "decision": self.decision,
            "failed": self.failed,
            "missing": self.missing,
        }


def rate_cell(
    factor: float,
    rate: float,
    cosine: Mapping[int, float],
    candidate: Mapping[int, float],
    *,
    confidence: float,
    failed: int = 0,
    missing: int = 0,
) -> RateCell:
    """The cell of one rate from the final val_loss of each seed (only finite values pair)."""
    seeds = tuple(sorted(s for s in set(cosine) & set(candidate) if _ok(cosine[s]) and _ok(candidate[s])))
    if not seeds:
        return RateCell(factor, rate, (), None, math.nan, math.nan, failed, missing)
    gaps = [cosine[s] - candidate[s] for s in seeds]
    gap = mean_ci(gaps, confidence)
    mean_c = math.fsum(cosine[s] for s in seeds) / len(seeds)
    mean_b = math.fsum(candidate[s] for s in seeds) / len(seeds)
    return RateCell(factor, rate, seeds, gap, mean_c, mean_b, failed, missing)


@dataclass(frozen=True)
class RateCheck:
    """The rate check of one verdict: the candidate against cosine at half, base and twice the rate."""

    group: str
    candidate: str
    cosine: str
    base_rate: float
    rate_source: str  # how the base rate was chosen: "calibrated", "configured" or "given"
    seeds: tuple[int, ...]  # the planned paired seeds
    alpha: float
    cells: tuple[RateCell, ...]  # in FACTORS order

    @property
    def confidence(self) -> float:
        return check_confidence(self.alpha)

    @property
    def outcome(self) -> str:
        return rate_outcome([c.decision for c in self.cells])[0]

    @property
    def reason(self) -> str:
        return rate_outcome([c.decision for c in self.cells])[1]

    def headline(self) -> str:
        """One sentence: the outcome, what held or changed, and the intervals of every rate."""
        out, reason = self.outcome, self.reason
        who = f"{self.candidate} vs {self.cosine}"
        if out == HOLDS:
            side = "the candidate better than cosine" if reason == BETTER else "cosine better than the candidate"
            what = f"holds across rates: {side} at half, base and twice the rate"
        elif out == RATE_SENSITIVE and reason == "flips":
            what = (
                f"rate-sensitive: the sign flips (the candidate better at {self._rates(BETTER)}, cosine better at "
                f"{self._rates(WORSE)})"
            )
        elif out == RATE_SENSITIVE:
            shown = [d for d in (BETTER, WORSE) if self._rates(d)]
            side = "the candidate better" if shown == [BETTER] else "cosine better"
            what = (
                f"rate-sensitive: {side} at {self._rates(shown[0])}, not shown at {self._rates(UNDECIDED)} "
                "(undecided there: no evidence either way)"
            )
        elif out == UNDECIDED:
            what = "undecided at every rate: no evidence of a difference at any of the three (not evidence of none)"
        else:
            lacking = ", ".join(c.name for c in self.cells if c.decision is None)
            what = f"incomplete: fewer than two paired seeds so far at {lacking}"
        level = f"{self.confidence:.1%} intervals (1 - {self.alpha:g}/3)"
        cells = "; ".join(c.text() for c in self.cells)
        return (
            f"learning-rate check, {who} ({self.rate_source} rate {self.base_rate:.6g}, paired seeds "
            f"{_seeds(self.seeds)}, {level}): {what}. Gap loss(cosine) - loss(candidate) by rate: {cells}"
        )

    def _rates(self, decision: str) -> str:
        return ", ".join(f"{c.name} ({c.rate:.6g})" for c in self.cells if c.decision == decision)

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "candidate": self.candidate,
            "cosine": self.cosine,
            "base_rate": self.base_rate,
            "rate_source": self.rate_source,
            "seeds": list(self.seeds),
            "alpha": self.alpha,
            "confidence": self.confidence,
            "outcome": self.outcome,
            "outcome_text": OUTCOME_TEXT[self.outcome],
            "reason": self.reason,
            "headline": self.headline(),
            "cells": [c.to_dict() for c in self.cells],
            "rule": (
                "per rate: gap = loss(cosine) - loss(candidate) on the paired seeds, two-sided t interval at "
                "1 - alpha/3; better/worse when it excludes 0; holds: the same decision at every rate; "
                "rate_sensitive: opposite decisions (flips) or decided at some rates only (changes); "
                "undecided: undecided at every rate"
            ),
        }


def rate_candidate(verdict: Verdict) -> str | None:
    """The profile a verdict's rate check re-trains beside cosine: the candidate shown better
    (`Verdict.better`), else the best-ranked profile that is not cosine; None when there is none."""
    if verdict.better is not None:
        return verdict.better
    for row in verdict.table:
        if row["label"] != verdict.cosine and row.get("baseline") != COSINE:
            return str(row["label"])
    return None


def group_base_width(verdict: Verdict) -> int:
    """The base width of a verdict's budget (every profile of a budget sums to n_layers x base)."""
    widths = next((row["widths"] for row in verdict.table if row.get("widths")), None)
    return sum(widths) // len(widths) if widths else 0


def rate_checks(records: Iterable[Any], doc: Mapping[str, Any] | None) -> list[RateCheck]:
    """The rate checks `doc` (verify.json's "rate_check") describes, from the records it names;
    a damaged entry is one `ConfigError` line."""
    if not doc:
        return []
    try:
        return _rate_checks(records, doc)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ConfigError(
            f"verify.json: its rate_check entry is damaged ({type(e).__name__}: {e}); "
            "`tlmsearch verify RUN_DIR --rate-check N` rewrites it"
        ) from None


def _rate_checks(records: Iterable[Any], doc: Mapping[str, Any]) -> list[RateCheck]:
    if not doc.get("groups"):
        return []
    by_id = {r.trial_id: r for r in as_records(records)}
    alpha = float(doc.get("alpha", 0.05))
    confidence = check_confidence(alpha)
    base = float(doc["base_lr"])
    out = []
    for group in doc["groups"]:
        cells = []
        for factor in FACTORS:
            runs = (group.get("runs") or {}).get(_key(factor)) or {}
            losses: dict[str, dict[int, float]] = {"cosine": {}, "candidate": {}}
            failed = missing = 0
            for role in losses:
                for seed, trial_id in (runs.get(role) or {}).items():
                    r = by_id.get(trial_id) if trial_id else None
                    if r is None:
                        missing += 1
                    elif r.finished():
                        losses[role][int(seed)] = r.metric("val_loss")
                    else:
                        failed += 1
            cells.append(
                rate_cell(
                    factor,
                    base * factor,
                    losses["cosine"],
                    losses["candidate"],
                    confidence=confidence,
                    failed=failed,
                    missing=missing,
                )
            )
        out.append(
            RateCheck(
                group=str(group.get("group", "")),
                candidate=str(group["candidate"]),
                cosine=str(group["cosine"]),
                base_rate=base,
                rate_source=str(doc.get("rate_source", "configured")),
                seeds=tuple(int(s) for s in doc.get("seeds") or ()),
                alpha=alpha,
                cells=tuple(cells),
            )
        )
    return out


def short_text(check: Mapping[str, Any]) -> str:
    """A rate check's `to_dict` in a few words for status lines and tables:
    "holds across rates (better at 0.001, 0.002, 0.004)"."""
    cells = check.get("cells") or []
    parts = [f"{c['decision'] or 'no pairs'} at {c['rate']:.6g}" for c in cells]
    seeds = len(check.get("seeds") or [])
    return f"{check.get('outcome_text', check.get('outcome'))} ({', '.join(parts)}; {seeds} paired seeds)"


def _key(factor: float) -> str:
    """How a factor is written as a JSON key ("0.5", "1", "2")."""
    return format(factor, "g")


def _plain(iv: Interval | None) -> dict[str, Any] | None:
    """`iv.to_dict()` with an unbounded end (one seed) as None: strict JSON."""
    return None if iv is None else {k: _finite(v) if isinstance(v, float) else v for k, v in iv.to_dict().items()}


def _ok(x: float) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _expm1(x: float) -> float:
    return x if math.isinf(x) else math.expm1(x)


def _num(x: float) -> str:
    return f"{x:+.4f}" if math.isfinite(x) else "n/a"


def _seeds(seeds: Sequence[int]) -> str:
    if not seeds:
        return "none"
    if list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))) and len(seeds) > 2:
        return f"{seeds[0]}..{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


__all__ = [
    "FACTORS",
    "OUTCOMES",
    "RateCell",
    "RateCheck",
    "cell_decision",
    "group_base_width",
    "rate_candidate",
    "rate_cell",
    "rate_checks",
    "rate_outcome",
    "short_text",
]
