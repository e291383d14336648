"""Is cosine tapering near-optimal? Three outcomes from seed-paired re-evaluations, decided
against a margin declared before the data.

Input: one `ProfileResult` per re-trained profile, with its final validation loss and perplexity
for each seed. Every other profile is a candidate against cosine, paired by seed; its gain is
ppl_cosine / ppl_candidate - 1 (positive: the candidate is better), tested on the log scale where
the paired differences are closest to normal. With margin M (default 1% perplexity) and level
alpha (default 0.05) the outcome is (rule and its reasons in `decision.py`):

- "better": some candidate's gain is shown above 0 (one-sided t tests, Holm over the m
  candidates): the headline says by how much and whether the gain also clears M;
- "near_optimal": every candidate's gain is shown below M (one-sided non-inferiority tests,
  Holm over the m candidates): absence of evidence is never taken for evidence;
- "inconclusive": neither, with the seeds that the observed paired spread says would decide it.

Each claim is wrong at most alpha of the time (simulated in `tests/unit/analysis/test_verdict_simulation.py`).
Every candidate's interval is two-sided at 1 - 2 alpha / m (its ends are the Bonferroni one-sided
bounds). Cosine's regret, the largest gain of any candidate over cosine, gets the interval
[max of lower ends, max of upper ends], simultaneous at 1 - 2 alpha, whichever profile has the
best mean.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tlmsearch.analysis import decision
from tlmsearch.analysis.headline import describe_shape as describe_shape  # re-exported: callers name it here
from tlmsearch.analysis.headline import headline
from tlmsearch.analysis.planning import seeds_to_decide
from tlmsearch.analysis.regime import Regime
from tlmsearch.analysis.stats import (
    Interval,
    RankCorrelation,
    bootstrap_ci,
    check_method,
    paired,
    paired_difference,
    rank_correlation,
)
from tlmsearch.configs.identity import DEFAULT_REFERENCE, merged_name
from tlmsearch.errors import ConfigError

COSINE = "cosine"
UNIFORM = "uniform"
DEFAULT_MARGIN = 0.01
DEFAULT_ALPHA = 0.05


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
    steps: int | None = None  # training steps of the re-evaluation
    search_steps: int | None = None  # training steps behind `search_score`
    # a joint architecture's per-layer query heads, kv heads, block widths (`rundir.axes.layer_axes`; {}: the preset's)
    axes: Mapping[str, list[int] | None] = field(default_factory=dict)
    # every profile text this one model stands for when several build it (`configs.identity`), () for one
    names: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The candidate as shown: all its names, "cosine:... = linear:..." (its label when it has one)."""
        return merged_name(self.names) if self.names else self.label

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

    def only(self, seeds: Collection[int]) -> ProfileResult:
        """The same result restricted to `seeds`."""
        from dataclasses import replace

        keep = set(seeds)
        return replace(
            self,
            loss={s: v for s, v in self.loss.items() if s in keep},
            ppl={s: v for s, v in self.ppl.items() if s in keep},
        )


@dataclass(frozen=True)
class Comparison:
    """One profile against one reference, paired by seed. Negative diffs: profile is better.

    Against cosine, the tests of the verdict: Holm-adjusted p-values of "gain > 0" (`p_better`)
    and of "gain < margin" (`p_within`) and their outcomes (None against uniform).
    """

    label: str
    reference: str
    n: int
    loss_diff: Interval  # mean over seeds of loss_profile - loss_reference
    ppl_diff: Interval  # mean over seeds of ppl_profile - ppl_reference
    gain: Interval  # exp(mean over seeds of log(ppl_reference / ppl_profile)) - 1 (positive: profile better)
    p_better: float | None = None
    p_within: float | None = None
    shown_better: bool | None = None
    within_margin: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "reference": self.reference,
            "n": self.n,
            "loss_diff": self.loss_diff.to_dict(),
            "ppl_diff": self.ppl_diff.to_dict(),
            "gain": self.gain.to_dict(),
            "p_better": _finite_or_none(self.p_better),
            "p_within": _finite_or_none(self.p_within),
            "shown_better": self.shown_better,
            "within_margin": self.within_margin,
        }


@dataclass(frozen=True)
class Verdict:
    """The answer for one architecture (or one group of results)."""

    group: str
    outcome: str  # "better", "near_optimal" or "inconclusive"
    headline: str
    margin: float
    alpha: float
    confidence: float  # two-sided level of every candidate's interval: 1 - 2 alpha / m
    method: str  # interval method: "t" or "bootstrap"
    n_profiles: int
    n_candidates: int
    n_seeds: int  # fewest paired seeds of any candidate
    cosine: str
    best: str  # label with the lowest mean perplexity
    cosine_rank: int  # 1 = lowest mean loss (the ranking of the table, `status` and `export`)
    regret: Interval  # largest gain of any candidate over cosine, simultaneous at 1 - 2 alpha
    better: str | None  # the candidate shown better with the largest lower bound
    better_clears_margin: bool | None  # whether that lower bound also clears the margin
    better_widths: tuple[int, ...] | None
    better_shape: Mapping[str, Any] | None
    within_margin: bool  # every candidate shown below the margin (also possible beside "better")
    seeds_to_decide: int | None  # when inconclusive: seeds per profile the observed spread asks for
    rank_correlation: RankCorrelation | None  # search-time score vs verified mean loss
    rank_correlation_measures: str  # what that correlation measures here (its honest name)
    # the search's favourite among the re-evaluated profiles: its search-time val_loss against its
    # mean verified val_loss at the SAME number of steps (positive: the short trial flattered it:
    # the winner's curse); None when the step counts differ
    search_best: str | None
    search_optimism: float | None
    comparisons: tuple[Comparison, ...]
    table: tuple[Mapping[str, Any], ...]  # one row per profile, sorted by mean perplexity
    # the regime of the deciding records (`analysis.regime`; the headline states it), None when
    # the verdict was taken from results without their records
    regime: Regime | None = None
    # how the text names the reference every candidate is compared with (`cosine` above is its label)
    reference: str = COSINE

    @property
    def near_optimal(self) -> bool:
        return self.outcome == "near_optimal"

    @property
    def threshold(self) -> float:
        """The margin (its former name)."""
        return self.margin

    @property
    def spearman(self) -> float | None:
        rc = self.rank_correlation
        return None if rc is None or math.isnan(rc.rho) else rc.rho

    @property
    def n_spearman(self) -> int:
        return self.rank_correlation.n if self.rank_correlation else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "outcome": self.outcome,
            "near_optimal": self.near_optimal,
            "headline": self.headline,
            "margin": self.margin,
            "threshold": self.margin,
            "alpha": self.alpha,
            "confidence": self.confidence,
            "method": self.method,
            "n_profiles": self.n_profiles,
            "n_candidates": self.n_candidates,
            "n_seeds": self.n_seeds,
            "cosine": self.cosine,
            "reference": self.reference,
            "best": self.best,
            "cosine_rank": self.cosine_rank,
            "regret": self.regret.to_dict(),
            "better": self.better,
            "better_clears_margin": self.better_clears_margin,
            "better_widths": list(self.better_widths) if self.better_widths else None,
            "better_shape": dict(self.better_shape) if self.better_shape else None,
            "within_margin": self.within_margin,
            "seeds_to_decide": self.seeds_to_decide,
            "rank_correlation": self.rank_correlation.to_dict() if self.rank_correlation else None,
            "rank_correlation_measures": self.rank_correlation_measures,
            "spearman": self.spearman,
            "n_spearman": self.n_spearman,
            "search_best": self.search_best,
            "search_optimism": _finite_or_none(self.search_optimism),
            "comparisons": [c.to_dict() for c in self.comparisons],
            "table": [dict(r) for r in self.table],
            "regime": self.regime.to_dict() if self.regime is not None else None,
        }

    def with_regime(self, regime: Regime | None) -> Verdict:
        """This verdict with `regime`, which its headline then states (`Regime.clause`)."""
        if regime is None:
            return self
        from dataclasses import replace

        return replace(self, regime=regime, headline=f"{self.headline}; {regime.clause()}")


def resolve_levels(
    margin: float | None = None,
    alpha: float | None = None,
    *,
    threshold: float | None = None,
    confidence: float | None = None,
) -> tuple[float, float]:
    """(margin, alpha) from the new names or their former ones (threshold = margin,
    confidence = 1 - alpha); refuses contradictory pairs and bad values in one line."""
    if margin is not None and threshold is not None and margin != threshold:
        raise ConfigError(
            f"margin={margin} and threshold={threshold} disagree: give one (threshold is margin's old name)"
        )
    if alpha is not None and confidence is not None and not math.isclose(alpha, 1.0 - confidence):
        raise ConfigError(f"alpha={alpha} and confidence={confidence} disagree: give one (confidence = 1 - alpha)")
    m = margin if margin is not None else (threshold if threshold is not None else DEFAULT_MARGIN)
    a = alpha if alpha is not None else (1.0 - confidence if confidence is not None else DEFAULT_ALPHA)
    decision.check_levels(m, a)
    return float(m), float(a)


def _log_gains(reference: ProfileResult, result: ProfileResult) -> list[float]:
    """Per common seed: log(ppl_reference) - log(ppl_result) (positive: result is better)."""
    _, ref, res = paired(reference.ppl, result.ppl)
    return [math.log(a) - math.log(b) for a, b in zip(ref, res, strict=True)]


def _bounds(values: Sequence[float], level: float, method: str) -> tuple[float, float, float, float, float]:
    """(mean, se, df, low, high): one-sided bounds at `level` each side."""
    import numpy as np

    mean, se, df = decision.summarise(np.asarray([values]))
    if method == "bootstrap":
        iv = bootstrap_ci(values, confidence=2.0 * level - 1.0)
        return float(mean[0]), float(se[0]), float(df[0]), iv.low, iv.high
    low, high = decision.bounds(mean, se, df, level)
    return float(mean[0]), float(se[0]), float(df[0]), float(low[0]), float(high[0])


def _gain_interval(mean: float, low: float, high: float, n: int, confidence: float) -> Interval:
    """Log-scale mean and bounds as relative perplexity gains (an unbounded end stays infinite)."""
    return Interval(math.expm1(mean), _expm1(low), _expm1(high), n, confidence)


def _expm1(x: float) -> float:
    return x if math.isinf(x) else math.expm1(x)


def compare(result: ProfileResult, reference: ProfileResult, confidence: float = 0.95, method: str = "t") -> Comparison:
    """Seed-paired comparison of `result` against `reference`, intervals two-sided at `confidence`."""
    gains = _log_gains(reference, result)
    if not gains:
        raise ValueError("no common seeds to pair")
    mean, _, _, low, high = _bounds(gains, 0.5 + confidence / 2.0, method)
    return Comparison(
        label=result.label,
        reference=reference.label,
        n=len(gains),
        loss_diff=paired_difference(result.loss, reference.loss, confidence, method),
        ppl_diff=paired_difference(result.ppl, reference.ppl, confidence, method),
        gain=_gain_interval(mean, low, high, len(gains), confidence),
    )


def find(results: Sequence[ProfileResult], name: str) -> ProfileResult | None:
    """The result that is baseline `name` (the one with most seeds when several are)."""
    hits = [r for r in results if r.is_(name)]
    return max(hits, key=lambda r: r.n_seeds) if hits else None


def _canonical(text: str) -> str | None:
    from tlmsearch.profiles.spec import ProfileSpec  # lazy: only a chosen reference reads profile texts

    try:
        return str(ProfileSpec.parse(text).resolved())
    except ValueError:  # ConfigError, or a value its family refuses: no profile text
        return None


def is_default_reference(reference: str | None) -> bool:
    """Whether `reference` (a profile text, None: the default) is the paper's cosine 1.5 -> 0.5."""
    return reference is None or _canonical(reference) == DEFAULT_REFERENCE


def same_reference(a: str | None, b: str | None) -> bool:
    """Whether two references (profile texts, None: cosine 1.5 -> 0.5) name one profile, in any spelling."""
    if is_default_reference(a) or is_default_reference(b):
        return is_default_reference(a) and is_default_reference(b)
    return _canonical(str(a)) == _canonical(str(b))


def reference_name(reference: str | None) -> str:
    """How the verdict's text names the reference: "cosine" for the paper's taper, else its profile text."""
    from tlmsearch.profiles.spec import display_name  # lazy: as `_canonical`

    return COSINE if is_default_reference(reference) else display_name(str(reference))


def find_reference(results: Sequence[ProfileResult], reference: str | None = None) -> ProfileResult | None:
    """The result that is the reference profile `reference` (None: cosine 1.5 -> 0.5, also under its
    baseline tag): the candidate that builds its model, i.e. whose names (`ProfileResult.names`: every
    profile text that one model stands for, `configs.identity`) include it in any spelling; the one
    with most seeds when several do."""
    if is_default_reference(reference):
        return find(results, COSINE)
    wanted = _canonical(str(reference))
    hits = [r for r in results if wanted in {_canonical(n) for n in (r.label, *r.names)}]
    return max(hits, key=lambda r: r.n_seeds) if hits else None


def verdict(
    results: Sequence[ProfileResult],
    *,
    threshold: float | None = None,
    confidence: float | None = None,
    group: str = "",
    method: str = "t",
    margin: float | None = None,
    alpha: float | None = None,
    seeds: Collection[int] | None = None,
    power: float = 0.8,
    reference: str | None = None,
) -> Verdict:
    """Decide among `results` (which must include cosine): "better", "near_optimal" or "inconclusive".

    `reference` (a profile text; None: cosine 1.5 -> 0.5) is the profile every candidate is compared
    with (`find_reference`: recognised by the model it builds); the answer is whether IT is near-optimal,
    and the headline names it.
    `margin` (old name `threshold`) is the relative perplexity gain that matters, declared before
    the data; `alpha` (or `confidence` = 1 - alpha) the level of each claim. `method` is "t"
    (default) or "bootstrap" (BCa, refused below `stats.MIN_BOOTSTRAP_SEEDS` seeds). `seeds`
    restricts the decision to those seeds (e.g. the seeds after a variance-only pilot). `power`
    is the target behind `seeds_to_decide`.
    """
    margin, alpha = resolve_levels(margin, alpha, threshold=threshold, confidence=confidence)
    check_method(method)
    if seeds is not None:
        results = [r.only(seeds) for r in results]
    results = [r for r in results if r.n_seeds > 0]
    cos = find_reference(results, reference)
    ref = reference_name(reference)
    if cos is None:
        raise ValueError(f"no re-evaluated {ref} profile among the results: cannot judge {ref}")
    uni = find(results, UNIFORM)
    # by mean loss, the mean log perplexity: the verdict's paired statistic is its difference (a
    # mean perplexity, dominated by the worst seeds, can order two profiles the other way)
    ranked = sorted(results, key=lambda r: (r.mean_loss, r.label))
    best = ranked[0]
    cosine_rank = 1 + sum(r.mean_loss < cos.mean_loss for r in results)
    candidates = [r for r in ranked if r is not cos and set(r.ppl) & set(cos.ppl)]
    m = len(candidates)
    level = 1.0 - alpha / max(m, 1)  # each one-sided bound
    conf = 2.0 * level - 1.0  # each two-sided interval
    if method == "bootstrap":
        check_method(method, min((len(_log_gains(cos, r)) for r in candidates), default=0))

    stats_ = [_bounds(_log_gains(cos, r), level, method) for r in candidates]
    decided = _decide(stats_, margin, alpha, method)
    vs_cos: dict[str, Comparison] = {}
    for j, r in enumerate(candidates):
        mean, _, df, low, high = stats_[j]
        n = int(df) + 1
        vs_cos[r.label] = Comparison(
            label=r.label,
            reference=cos.label,
            n=n,
            loss_diff=paired_difference(r.loss, cos.loss, conf, method),
            ppl_diff=paired_difference(r.ppl, cos.ppl, conf, method),
            gain=_gain_interval(mean, low, high, n, conf),
            p_better=float(decided["p_better"][j]),
            p_within=float(decided["p_within"][j]),
            shown_better=bool(decided["shown_better"][j]),
            within_margin=bool(decided["within_margin"][j]),
        )
    vs_uni: dict[str, Comparison] = {}
    if uni is not None:
        for r in ranked:
            if r is not uni and set(r.ppl) & set(uni.ppl):
                vs_uni[r.label] = compare(r, uni, conf, method)
    comparisons = [c for r in ranked for c in (vs_cos.get(r.label), vs_uni.get(r.label)) if c is not None]

    n_seeds = min((c.n for c in vs_cos.values()), default=cos.n_seeds)
    outcome = decision.OUTCOMES[int(decided["outcome"])] if m else "inconclusive"
    regret = _regret(stats_, n_seeds, 1.0 - 2.0 * alpha)
    winners = [c for c in vs_cos.values() if c.shown_better]
    better = max(winners, key=lambda c: c.gain.low) if winners else None
    better_result = next((r for r in results if better and r.label == better.label), None)
    clears = None if better is None else better.gain.low > margin
    to_decide = None
    if outcome == "inconclusive" and m:
        means = [s[0] for s in stats_]
        sds = [s[1] * math.sqrt(s[2] + 1.0) for s in stats_]
        to_decide = seeds_to_decide(means, sds, margin=margin, alpha=alpha, power=power)

    rc, measures = _rank_correlation(results)
    favourite, optimism = _optimism(results)
    text = headline(
        outcome,
        margin=margin,
        alpha=alpha,
        m=m,
        n_seeds=n_seeds,
        conf=conf,
        better=better,
        clears=clears,
        better_result=better_result,
        vs_cos=vs_cos,
        ranked=ranked,
        cos=cos,
        regret=regret,
        to_decide=to_decide,
        max_p_within=max((c.p_within for c in vs_cos.values() if c.p_within is not None), default=math.nan),
        method=method,
        all_within=bool(decided["all_within"]) if m else False,
        ref=ref,
    )
    return Verdict(
        group=group,
        outcome=outcome,
        headline=text,
        margin=margin,
        alpha=alpha,
        confidence=conf,
        method=method,
        n_profiles=len(results),
        n_candidates=m,
        n_seeds=n_seeds,
        cosine=cos.label,
        reference=ref,
        best=best.label,
        cosine_rank=cosine_rank,
        regret=regret,
        better=better.label if better else None,
        better_clears_margin=clears,
        better_widths=better_result.widths if better_result else None,
        better_shape=dict(better_result.shape) if better_result else None,
        within_margin=bool(decided["all_within"]) if m else False,
        seeds_to_decide=to_decide,
        rank_correlation=rc,
        rank_correlation_measures=measures,
        search_best=favourite.label if favourite else None,
        search_optimism=optimism,
        comparisons=tuple(comparisons),
        table=tuple(_table(ranked, vs_cos, vs_uni)),
    )


def _decide(stats_: Sequence[tuple[float, ...]], margin: float, alpha: float, method: str) -> dict[str, Any]:
    import numpy as np

    if not stats_:
        return {"outcome": decision.INCONCLUSIVE, "all_within": False}
    arr = np.asarray(stats_, float)  # (m, 5): mean, se, df, low, high
    if method == "bootstrap":
        return decision.decide_from_bounds(arr[:, 3], arr[:, 4], margin=margin)
    return decision.decide(arr[:, 0], arr[:, 1], arr[:, 2], margin=margin, alpha=alpha)


def _regret(stats_: Sequence[tuple[float, ...]], n: int, confidence: float) -> Interval:
    """max_j gain_j with [max_j low_j, max_j high_j]: the Bonferroni bounds hold for all j at
    once with probability >= 1 - 2 alpha, and so then does this interval for the maximum."""
    if not stats_:
        return Interval(math.nan, math.nan, math.nan, n, confidence)
    return Interval(
        math.expm1(max(s[0] for s in stats_)),
        _expm1(max(s[3] for s in stats_)),
        _expm1(max(s[4] for s in stats_)),
        n,
        confidence,
    )


def _rank_correlation(results: Sequence[ProfileResult]) -> tuple[RankCorrelation | None, str]:
    """Spearman of search-time score vs verified mean loss, and what it measures here."""
    scored = [r for r in results if r.search_score is not None]
    if len(scored) < 3:
        return None, "too few re-evaluated profiles with a search score (fewer than 3)"
    rc = rank_correlation([r.search_score or 0.0 for r in scored], [r.mean_loss for r in scored])
    steps = {(r.search_steps, r.steps) for r in scored}
    if any(s is None or v is None for s, v in steps):
        what = "agreement of search-time and verified ranks (step counts unknown)"
    elif all(s == v for s, v in steps):
        what = (
            "seed-to-seed reliability: one search seed against fresh seeds at the same length, over these "
            "profiles only; not the fidelity of the short-trial proxy"
        )
    else:
        lengths = ", ".join(f"{s} -> {v}" for s, v in sorted(steps))
        what = f"proxy fidelity: ranks after the search's steps against ranks after the verified steps ({lengths})"
    return rc, what


def _optimism(results: Sequence[ProfileResult]) -> tuple[ProfileResult | None, float | None]:
    scored = [r for r in results if r.search_score is not None]
    if not scored:
        return None, None
    favourite = min(scored, key=lambda r: r.search_score or 0.0)
    same = favourite.steps is not None and favourite.steps == favourite.search_steps
    return favourite, (favourite.mean_loss - (favourite.search_score or 0.0)) if same else None


def _table(
    ranked: Sequence[ProfileResult], vs_cos: Mapping[str, Comparison], vs_uni: Mapping[str, Comparison]
) -> list[dict[str, Any]]:
    table = []
    for rank, r in enumerate(ranked, 1):
        vc, vu = vs_cos.get(r.label), vs_uni.get(r.label)
        table.append(
            {
                "rank": rank,
                "label": r.label,
                "name": r.name,
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
                "p_better": _finite_or_none(vc.p_better) if vc else None,
                "p_within": _finite_or_none(vc.p_within) if vc else None,
                "front_load": r.shape.get("front_load"),
                "search_score": r.search_score,
                "widths": list(r.widths),
                **r.axes,
            }
        )
    return table


def _finite_or_none(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None
