"""Near-optimality verdict for cosine tapering from seed-paired re-evaluations.

Input: one `ProfileResult` per re-trained profile, holding its final validation loss and
perplexity for each seed. Every profile is compared with cosine and with uniform, seed by
seed. With d = ppl_cosine / ppl_other - 1 per seed (positive: the other profile is better),
"a better profile was found" when for some profile the lower bound of the 95% t interval of
d exceeds the threshold (default 1%); otherwise "cosine is near-optimal".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tlmsearch.analysis.stats import Interval, paired_difference, paired_ratio, spearman

COSINE = "cosine"
UNIFORM = "uniform"


@dataclass(frozen=True)
class ProfileResult:
    """Re-evaluated results of one width profile: final metrics by seed."""

    label: str  # canonical profile text, e.g. "cosine:start=1.5,end=0.5"
    widths: tuple[int, ...]
    loss: Mapping[int, float]  # seed -> final val_loss (nats/token)
    ppl: Mapping[int, float]  # seed -> final val_ppl
    baseline: str | None = None  # "cosine", "uniform", ... when the profile is a named baseline
    profile: Mapping[str, Any] = field(default_factory=dict)  # ProfileSpec dict
    shape: Mapping[str, Any] = field(default_factory=dict)  # ShapeStats dict
    search_score: float | None = None  # val_loss of the same profile in the search (full fidelity)
    trial_ids: tuple[str, ...] = ()

    @property
    def mean_loss(self) -> float:
        return statistics.fmean(self.loss.values()) if self.loss else math.nan

    @property
    def mean_ppl(self) -> float:
        return statistics.fmean(self.ppl.values()) if self.ppl else math.nan

    @property
    def n_seeds(self) -> int:
        return len(self.ppl)

    def is_(self, name: str) -> bool:
        """Whether this is the named baseline (by baseline tag, or the family's default form)."""
        if self.baseline == name:
            return True
        family = self.profile.get("family") or self.label.split(":", 1)[0]
        if family != name:
            return False
        if name == COSINE:  # only the paper's 1.5 -> 0.5 taper counts as "cosine"
            params = self.profile.get("params") or {}
            return float(params.get("start", 1.5)) == 1.5 and float(params.get("end", 0.5)) == 0.5
        return True


@dataclass(frozen=True)
class Comparison:
    """One profile against one reference, paired by seed. Negative diffs: profile is better."""

    label: str
    reference: str
    n: int
    loss_diff: Interval  # mean over seeds of loss_profile - loss_reference
    ppl_diff: Interval  # mean over seeds of ppl_profile - ppl_reference
    gain: Interval  # mean over seeds of ppl_reference / ppl_profile - 1 (positive: profile better)

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "reference": self.reference,
            "n": self.n,
            "loss_diff": self.loss_diff.to_dict(),
            "ppl_diff": self.ppl_diff.to_dict(),
            "gain": self.gain.to_dict(),
        }


@dataclass(frozen=True)
class Verdict:
    """The answer for one architecture (or one group of results)."""

    group: str
    near_optimal: bool
    headline: str
    threshold: float
    confidence: float
    method: str  # interval method: "t" or "bootstrap"
    n_profiles: int
    cosine: str
    best: str  # label with the lowest mean perplexity
    cosine_rank: int  # 1 = best mean perplexity
    regret: Interval  # (ppl_cosine - ppl_best) / ppl_best, paired by seed
    better: str | None  # the profile that beats cosine with confidence (largest lower bound)
    better_widths: tuple[int, ...] | None
    better_shape: Mapping[str, Any] | None
    spearman: float | None  # search-time score vs verified score, over profiles having both
    n_spearman: int
    # the search's favourite among the re-evaluated profiles: its search-time val_loss against its
    # mean verified val_loss (positive optimism = the short trial flattered it: the winner's curse)
    search_best: str | None
    search_optimism: float | None
    comparisons: tuple[Comparison, ...]
    table: tuple[Mapping[str, Any], ...]  # one row per profile, sorted by mean perplexity

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "near_optimal": self.near_optimal,
            "headline": self.headline,
            "threshold": self.threshold,
            "confidence": self.confidence,
            "method": self.method,
            "n_profiles": self.n_profiles,
            "cosine": self.cosine,
            "best": self.best,
            "cosine_rank": self.cosine_rank,
            "regret": self.regret.to_dict(),
            "better": self.better,
            "better_widths": list(self.better_widths) if self.better_widths else None,
            "better_shape": dict(self.better_shape) if self.better_shape else None,
            "spearman": _finite_or_none(self.spearman),
            "n_spearman": self.n_spearman,
            "search_best": self.search_best,
            "search_optimism": _finite_or_none(self.search_optimism),
            "comparisons": [c.to_dict() for c in self.comparisons],
            "table": [dict(r) for r in self.table],
        }


def compare(result: ProfileResult, reference: ProfileResult, confidence: float = 0.95, method: str = "t") -> Comparison:
    """Seed-paired comparison of `result` against `reference`."""
    return Comparison(
        label=result.label,
        reference=reference.label,
        n=len(set(result.ppl) & set(reference.ppl)),
        loss_diff=paired_difference(result.loss, reference.loss, confidence, method),
        ppl_diff=paired_difference(result.ppl, reference.ppl, confidence, method),
        gain=paired_ratio(reference.ppl, result.ppl, confidence, method),
    )


def find(results: Sequence[ProfileResult], name: str) -> ProfileResult | None:
    """The result that is baseline `name` (the one with most seeds when several are)."""
    hits = [r for r in results if r.is_(name)]
    return max(hits, key=lambda r: r.n_seeds) if hits else None


def verdict(
    results: Sequence[ProfileResult],
    *,
    threshold: float = 0.01,
    confidence: float = 0.95,
    group: str = "",
    method: str = "t",
) -> Verdict:
    """Decide whether cosine is near-optimal among `results` (which must include cosine).

    `method` is the interval of the paired per-seed values: "t" (Student t, default) or
    "bootstrap" (percentile bootstrap; needs more seeds than t to mean much).
    """
    results = [r for r in results if r.n_seeds > 0]
    cos = find(results, COSINE)
    if cos is None:
        raise ValueError("no re-evaluated cosine profile among the results: cannot judge cosine")
    uni = find(results, UNIFORM)
    ranked = sorted(results, key=lambda r: r.mean_ppl)
    best = ranked[0]
    cosine_rank = 1 + sum(r.mean_ppl < cos.mean_ppl for r in results)

    comparisons: list[Comparison] = []
    vs_cos: dict[str, Comparison] = {}
    vs_uni: dict[str, Comparison] = {}
    for r in ranked:
        for ref in (cos, uni):
            if ref is None or r is ref or not set(r.ppl) & set(ref.ppl):
                continue
            c = compare(r, ref, confidence, method)
            comparisons.append(c)
            (vs_cos if ref is cos else vs_uni)[r.label] = c

    if best is cos or best.label not in vs_cos:
        regret = Interval(0.0, 0.0, 0.0, cos.n_seeds, confidence)
    else:
        regret = vs_cos[best.label].gain  # ppl_cos / ppl_best - 1 by seed

    winners = [c for c in vs_cos.values() if c.gain.low > threshold]
    better = max(winners, key=lambda c: c.gain.low) if winners else None
    better_result = next((r for r in results if better and r.label == better.label), None)

    pct = f"{threshold:.1%}"
    if better_result is not None and better is not None:
        headline = (
            f"a better profile was found: {better.label} has {better.gain.estimate:.2%} lower perplexity "
            f"than cosine (95% CI {better.gain.low:.2%} to {better.gain.high:.2%}, n={better.n} seeds), "
            f"more than the {pct} threshold{describe_shape(better_result.shape)}"
        )
    else:
        headline = (
            f"cosine is near-optimal: no profile beats it by more than {pct} perplexity with "
            f"{confidence:.0%} confidence (cosine ranks {cosine_rank} of {len(results)}; regret "
            f"{regret.estimate:.2%}, CI {_pct(regret.low)} to {_pct(regret.high)})"
        )
        if regret.high > threshold:  # no proof of a better profile, but not proof of near-optimality either
            headline += (
                f"; the intervals are wide: the best profile may still beat cosine by up to {_pct(regret.high)} "
                "(more seeds or longer runs would narrow them)"
            )

    pairs = [(r.search_score, r.mean_loss) for r in results if r.search_score is not None]
    rho = spearman([p[0] for p in pairs], [p[1] for p in pairs]) if len(pairs) >= 3 else None
    scored = [r for r in results if r.search_score is not None]
    favourite = min(scored, key=lambda r: r.search_score or 0.0) if scored else None
    optimism = None
    if favourite is not None and favourite.search_score is not None:
        optimism = favourite.mean_loss - favourite.search_score

    table = []
    for rank, r in enumerate(ranked, 1):
        vc, vu = vs_cos.get(r.label), vs_uni.get(r.label)
        table.append(
            {
                "rank": rank,
                "label": r.label,
                "baseline": r.baseline,
                "n_seeds": r.n_seeds,
                "mean_loss": r.mean_loss,
                "mean_ppl": r.mean_ppl,
                "gain_vs_cosine": vc.gain.to_dict() if vc else None,
                "gain_vs_uniform": vu.gain.to_dict() if vu else None,
                "loss_diff_vs_cosine": vc.loss_diff.to_dict() if vc else None,
                "loss_diff_vs_uniform": vu.loss_diff.to_dict() if vu else None,
                "ppl_diff_vs_cosine": vc.ppl_diff.to_dict() if vc else None,
                "ppl_diff_vs_uniform": vu.ppl_diff.to_dict() if vu else None,
                "front_load": r.shape.get("front_load"),
                "search_score": r.search_score,
                "widths": list(r.widths),
            }
        )

    return Verdict(
        group=group,
        near_optimal=better is None,
        headline=headline,
        threshold=threshold,
        confidence=confidence,
        method=method,
        n_profiles=len(results),
        cosine=cos.label,
        best=best.label,
        cosine_rank=cosine_rank,
        regret=regret,
        better=better.label if better else None,
        better_widths=better_result.widths if better_result else None,
        better_shape=dict(better_result.shape) if better_result else None,
        spearman=rho,
        search_best=favourite.label if favourite else None,
        search_optimism=optimism,
        n_spearman=len(pairs),
        comparisons=tuple(comparisons),
        table=tuple(table),
    )


def describe_shape(shape: Mapping[str, Any]) -> str:
    """'; its shape: front-load 0.36, non-increasing, best-fit cosine 1.45 -> 0.55 (RMS residual 0.08)'."""
    if not shape or "front_load" not in shape:
        return ""
    text = f"; its shape: front-load {float(shape['front_load']):.2f}"
    if shape.get("monotonicity"):
        text += f", {shape['monotonicity']}"
    if "cosine_start" in shape:
        text += (
            f", best-fit cosine {float(shape['cosine_start']):.2f} -> {float(shape['cosine_end']):.2f}"
            f" (RMS residual {float(shape.get('cosine_distance', math.nan)):.2f})"
        )
    return text


def _pct(x: float) -> str:
    return f"{x:.2%}" if math.isfinite(x) else ("-inf" if x < 0 else "inf")


def _finite_or_none(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None
