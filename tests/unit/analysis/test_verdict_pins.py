"""`analysis/verdict.py` pinned by hand and by an independent computation (issue 51): which
candidate is named `better` when two are shown better, every interval's ends and level (against
cosine and against uniform), the signs of the paired differences, `n_seeds`, Holm's adjusted
p-values, the regret, the search's favourite and its optimism, the bootstrap route, and how the
baselines are recognised.

The independent computation: per-seed log gains typed below, their mean and sample sd by
`statistics`, t quantiles and one-sided p-values from `scipy.stats` directly (`ttest_1samp`),
Holm by hand; none of it goes through `analysis/decision.py` or `analysis/stats.py`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import pytest
from scipy import stats

from tlmsearch.analysis.planning import seeds_to_decide
from tlmsearch.analysis.stats import bootstrap_ci
from tlmsearch.analysis.verdict import (
    Comparison,
    ProfileResult,
    Verdict,
    compare,
    find,
    find_reference,
    resolve_levels,
    verdict,
)
from tlmsearch.errors import ConfigError

ALPHA, MARGIN = 0.05, 0.01
COS, UNI = "cosine:start=1.5,end=0.5", "uniform"
A, B = "knots:k0=3,k1=1", "knots:k0=2,k1=1"  # A: the best mean; B: the higher lower bound

COS_LOSS = [2.00, 2.02, 1.98, 2.01]
# log gains over cosine, seed by seed (positive: the candidate is better); uniform has seeds 0-2 only
GAIN = {A: [0.09, 0.05, 0.08, 0.06], B: [0.050, 0.052, 0.048, 0.050], UNI: [-0.01, 0.00, -0.02]}
M = 3  # candidates: A, B, uniform
LEVEL = 1 - ALPHA / M  # each one-sided bound
CONF = 1 - 2 * ALPHA / M  # each two-sided interval: 0.9667


def result(label: str, loss: Sequence[float], *, baseline: str | None = None, **kw: object) -> ProfileResult:
    family = label.split(":", 1)[0]
    return ProfileResult(
        label=label,
        widths=(64, 32) if label == B else (48, 48),
        loss=dict(enumerate(loss)),
        ppl={s: math.exp(x) for s, x in enumerate(loss)},
        baseline=baseline,
        profile={"family": family, "params": {}},
        **kw,  # type: ignore[arg-type]
    )


def cand_loss(label: str) -> list[float]:
    return [c - g for c, g in zip(COS_LOSS, GAIN[label], strict=False)]


def four(**scores: dict) -> list[ProfileResult]:
    return [
        result(COS, COS_LOSS, baseline="cosine", **scores.get("cos", {})),
        result(UNI, cand_loss(UNI), baseline="uniform", **scores.get("uni", {})),
        result(A, cand_loss(A), **scores.get("a", {})),
        result(B, cand_loss(B), shape={"front_load": 0.25}, **scores.get("b", {})),
    ]


def t_ends(values: Sequence[float], level: float) -> tuple[float, float, float]:
    """(mean, mean - q sd/sqrt(n), mean + q sd/sqrt(n)) with q the t quantile at `level`."""
    n, mean = len(values), statistics.fmean(values)
    half = stats.t.ppf(level, n - 1) * statistics.stdev(values) / math.sqrt(n)
    return mean, mean - half, mean + half


def p_one_sided(values: Sequence[float], null: float, alternative: str) -> float:
    return float(stats.ttest_1samp(values, null, alternative=alternative).pvalue)


def holm3(p: dict[str, float]) -> dict[str, float]:
    order = sorted(p, key=p.get)  # type: ignore[arg-type]
    out, running = {}, 0.0
    for k, label in enumerate(order):
        running = max(running, min(1.0, (3 - k) * p[label]))
        out[label] = running
    return out


def by(v: Verdict, label: str, reference: str) -> Comparison:
    (c,) = [c for c in v.comparisons if c.label == label and c.reference == reference]
    return c


# ----------------------------------------------------------------------------- against cosine


def test_two_winners_the_one_with_the_larger_lower_bound_is_named_better() -> None:
    v = verdict(four(), margin=MARGIN, alpha=ALPHA)
    # by hand: A's gains have mean 0.07 and sd 0.01826 (se 0.00913), B's mean 0.05 and sd 0.001633;
    # at 1 - 0.05/3 on 3 df (q = 3.7405) A's lower bound is 0.0359, B's 0.0469: both above 0, B above A
    qa = stats.t.ppf(LEVEL, 3)
    assert qa == pytest.approx(3.7405, abs=1e-4)
    assert statistics.stdev(GAIN[A]) == pytest.approx(0.0182574, rel=1e-5)
    low_a, low_b = 0.07 - qa * 0.0182574 / 2, 0.05 - qa * 0.0016330 / 2
    assert low_a == pytest.approx(0.035854, abs=1e-5) and low_b == pytest.approx(0.046946, abs=1e-5)
    assert v.outcome == "better"
    assert v.best == A  # lowest mean loss
    assert v.better == B  # the larger lower bound, not the better mean
    assert v.better_widths == (64, 32) and v.better_shape == {"front_load": 0.25}
    assert v.better_clears_margin is True  # expm1(0.0468) = 4.8 % > 1 %
    assert by(v, B, COS).gain.low == pytest.approx(math.expm1(low_b), rel=1e-4)
    assert by(v, A, COS).gain.low == pytest.approx(math.expm1(low_a), rel=1e-4)
    assert v.cosine_rank == 3 and v.cosine == COS and v.reference == "cosine"
    assert (v.n_profiles, v.n_candidates) == (4, 3)
    assert v.within_margin is False and v.seeds_to_decide is None
    assert v.headline.startswith(f"a better profile than cosine exists: {B} has ")


def test_each_candidate_against_cosine_independently() -> None:
    v = verdict(four(), margin=MARGIN, alpha=ALPHA)
    assert v.confidence == pytest.approx(CONF) and v.method == "t"
    delta = math.log1p(MARGIN)
    p_better = holm3({k: p_one_sided(GAIN[k], 0.0, "greater") for k in GAIN})
    p_within = holm3({k: p_one_sided(GAIN[k], delta, "less") for k in GAIN})
    for label in (A, B, UNI):
        c = by(v, label, COS)
        g = GAIN[label]
        mean, low, high = t_ends(g, LEVEL)
        assert c.n == len(g)
        assert c.gain.confidence == pytest.approx(CONF) and c.gain.n == len(g)
        assert (c.gain.estimate, c.gain.low, c.gain.high) == pytest.approx(
            (math.expm1(mean), math.expm1(low), math.expm1(high)), rel=1e-9
        )
        assert c.p_better == pytest.approx(p_better[label], rel=1e-9)
        assert c.p_within == pytest.approx(p_within[label], rel=1e-9)
        assert c.shown_better is (p_better[label] <= ALPHA)
        assert c.within_margin is (p_within[label] <= ALPHA)
        # the paired differences: candidate minus cosine, negative where the candidate is better
        cos = COS_LOSS[: len(g)]
        loss = [x - y for x, y in zip(cand_loss(label), cos, strict=False)]
        ppl = [math.exp(x) - math.exp(y) for x, y in zip(cand_loss(label), cos, strict=False)]
        for iv, d in ((c.loss_diff, loss), (c.ppl_diff, ppl)):
            m_, lo, hi = t_ends(d, LEVEL)
            assert (iv.estimate, iv.low, iv.high) == pytest.approx((m_, lo, hi), rel=1e-9)
            assert iv.confidence == pytest.approx(CONF)
    # by hand: B's p_better is the smallest (x3), A's next (x2), uniform's last (x1)
    assert by(v, B, COS).shown_better and by(v, A, COS).shown_better and not by(v, UNI, COS).shown_better
    assert by(v, A, COS).ppl_diff.estimate < 0 < by(v, UNI, COS).ppl_diff.estimate
    assert by(v, A, COS).loss_diff.estimate == pytest.approx(-0.07)
    assert by(v, UNI, COS).loss_diff.estimate == pytest.approx(0.01)


def test_n_seeds_is_the_fewest_paired_seeds_and_the_regret_takes_the_largest_ends() -> None:
    v = verdict(four(), margin=MARGIN, alpha=ALPHA)
    assert v.n_seeds == 3  # uniform was trained on seeds 0-2 only; A and B on 0-3
    ends = {k: t_ends(GAIN[k], LEVEL) for k in GAIN}
    r = v.regret
    # the largest mean (A's 0.07), the largest lower end (B's), the largest upper end (A's)
    assert r.estimate == pytest.approx(math.expm1(0.07))
    assert r.low == pytest.approx(math.expm1(ends[B][1]), rel=1e-9)
    assert r.high == pytest.approx(math.expm1(ends[A][2]), rel=1e-9)
    assert r.confidence == pytest.approx(1 - 2 * ALPHA) and r.n == 3


# ----------------------------------------------------------------------------- against uniform


def test_every_other_profile_is_compared_with_uniform_at_the_candidates_level() -> None:
    v = verdict(four(), margin=MARGIN, alpha=ALPHA)
    uni = cand_loss(UNI)  # seeds 0-2
    for label, loss in ((A, cand_loss(A)), (B, cand_loss(B)), (COS, COS_LOSS)):
        c = by(v, label, UNI)
        assert c.n == 3 and c.p_better is None and c.shown_better is None and c.within_margin is None
        gains = [math.log(math.exp(u)) - math.log(math.exp(x)) for u, x in zip(uni, loss[:3], strict=True)]
        mean, low, high = t_ends(gains, LEVEL)  # two-sided at CONF, the level of the cosine intervals
        assert c.gain.confidence == pytest.approx(CONF)
        assert (c.gain.estimate, c.gain.low, c.gain.high) == pytest.approx(
            (math.expm1(mean), math.expm1(low), math.expm1(high)), rel=1e-9
        )
        d = [math.exp(x) - math.exp(u) for x, u in zip(loss[:3], uni, strict=True)]
        m_, lo, hi = t_ends(d, LEVEL)
        assert (c.ppl_diff.estimate, c.ppl_diff.low, c.ppl_diff.high) == pytest.approx((m_, lo, hi), rel=1e-9)
        assert c.loss_diff.estimate == pytest.approx(statistics.fmean(x - u for x, u in zip(loss, uni, strict=False)))
    # on seeds 0-2 A is 0.09, 0.05, 0.08 nats below cosine and uniform 0.01, 0, 0.02 above it: -0.25 / 3
    assert by(v, A, UNI).loss_diff.estimate == pytest.approx(-0.25 / 3)
    assert by(v, A, UNI).ppl_diff.estimate < 0 and by(v, A, UNI).gain.estimate > 0
    # the order: by mean loss, each profile against cosine, then against uniform
    assert [(c.label, c.reference) for c in v.comparisons] == [
        (A, COS),
        (A, UNI),
        (B, COS),
        (B, UNI),
        (COS, UNI),
        (UNI, COS),
    ]


def test_compare_alone_at_its_default_level() -> None:
    res = four()
    c = compare(res[2], res[0])  # A against cosine, two-sided 95 %
    mean, low, high = t_ends(GAIN[A], 0.975)
    assert (c.label, c.reference, c.n) == (A, COS, 4)
    assert (c.gain.estimate, c.gain.low, c.gain.high) == pytest.approx(
        (math.expm1(mean), math.expm1(low), math.expm1(high)), rel=1e-9
    )
    assert c.gain.confidence == 0.95 and c.loss_diff.confidence == 0.95
    assert c.loss_diff.estimate == pytest.approx(-0.07)
    with pytest.raises(ValueError, match="no common seeds to pair"):
        compare(res[2].only([0]), res[0].only([1]))


def test_the_table_rows() -> None:
    v = verdict(four(), margin=MARGIN, alpha=ALPHA)
    rows = {r["label"]: r for r in v.table}
    assert [r["label"] for r in v.table] == [A, B, COS, UNI] and [r["rank"] for r in v.table] == [1, 2, 3, 4]
    assert rows[COS]["gain_vs_cosine"] is None and rows[COS]["p_better"] is None
    assert rows[UNI]["gain_vs_uniform"] is None and rows[UNI]["loss_diff_vs_uniform"] is None
    assert rows[A]["gain_vs_cosine"] == by(v, A, COS).gain.to_dict()
    assert rows[A]["gain_vs_uniform"] == by(v, A, UNI).gain.to_dict()
    assert rows[A]["ppl_diff_vs_cosine"] == by(v, A, COS).ppl_diff.to_dict()
    assert rows[A]["ppl_diff_vs_uniform"] == by(v, A, UNI).ppl_diff.to_dict()
    assert rows[A]["loss_diff_vs_uniform"] == by(v, A, UNI).loss_diff.to_dict()
    assert rows[A]["p_better"] == by(v, A, COS).p_better and rows[A]["p_within"] == by(v, A, COS).p_within
    assert rows[B]["front_load"] == 0.25 and rows[B]["widths"] == [64, 32]
    assert rows[UNI]["n_seeds"] == 3 and rows[COS]["mean_loss"] == pytest.approx(2.0025)
    assert rows[UNI]["baseline"] == "uniform" and rows[A]["name"] == A
    d = v.to_dict()
    assert d["n_seeds"] == 3 and d["better"] == B and d["best"] == A and d["search_best"] is None
    assert d["better_widths"] == [64, 32] and d["comparisons"][0]["p_within"] == by(v, A, COS).p_within
    assert d["regime"] is None and d["threshold"] == MARGIN and d["near_optimal"] is False


# ----------------------------------------------------------------------------- the search's favourite


def test_the_search_favourite_its_optimism_and_the_rank_correlation() -> None:
    same = {"steps": 40, "search_steps": 40}
    v = verdict(
        four(
            cos={"search_score": 1.99, **same},
            uni={"search_score": 2.00, **same},
            a={"search_score": 1.95, **same},
            b={"search_score": 1.90, **same},
        ),
        margin=MARGIN,
        alpha=ALPHA,
    )
    # the lowest search score is B's; its mean verified loss is 2.0025 - 0.05 = 1.9525: 0.0525 above
    assert v.search_best == B and v.search_optimism == pytest.approx(0.0525)
    # search ranks A 2, B 1, cos 3, uni 4; verified ranks A 1, B 2, cos 3, uni 4: 1 - 6 * 2 / (4 * 15)
    assert v.spearman == pytest.approx(0.8) and v.n_spearman == 4 and v.rank_correlation.interval is None
    assert v.rank_correlation_measures.startswith("seed-to-seed reliability")
    # other step counts: no optimism, and the correlation measures the proxy
    longer = {"steps": 300, "search_steps": 40}
    v = verdict(
        four(
            cos={"search_score": 1.99, **longer},
            uni={"search_score": 2.00, **longer},
            a={"search_score": 1.95, **longer},
            b={"search_score": 1.90, **longer},
        ),
        margin=MARGIN,
        alpha=ALPHA,
    )
    assert v.search_best == B and v.search_optimism is None and v.to_dict()["search_optimism"] is None
    assert v.rank_correlation_measures == (
        "proxy fidelity: ranks after the search's steps against ranks after the verified steps (40 -> 300)"
    )
    # step counts unknown; a favourite that scored exactly 0.0 in the search is still the favourite
    v = verdict(
        four(
            cos={"search_score": 1.99},
            uni={"search_score": 2.00},
            a={"search_score": 0.0, "steps": 40, "search_steps": 40},
            b={"search_score": 1.90},
        ),
        margin=MARGIN,
        alpha=ALPHA,
    )
    assert v.search_best == A and v.search_optimism == pytest.approx(1.9325)
    assert v.rank_correlation_measures.endswith("(step counts unknown)")
    # two scored profiles: no correlation
    v = verdict(four(a={"search_score": 1.95}, b={"search_score": 1.90}), margin=MARGIN, alpha=ALPHA)
    assert v.search_best == B and v.search_optimism is None
    assert v.rank_correlation is None and v.spearman is None and v.n_spearman == 0
    assert v.rank_correlation_measures == "too few re-evaluated profiles with a search score (fewer than 3)"


# ----------------------------------------------------------------------------- other outcomes


def test_inconclusive_asks_for_the_seeds_the_observed_spread_needs() -> None:
    noisy = {"x": [0.02, -0.01, 0.03, 0.00], "y": [0.00, 0.01, -0.01, 0.005]}
    res = [result(COS, COS_LOSS, baseline="cosine")] + [
        result(f"knots:k0={i + 2},k1=1", [c - g for c, g in zip(COS_LOSS, gains, strict=True)])
        for i, gains in enumerate(noisy.values())
    ]
    v = verdict(res, margin=MARGIN, alpha=ALPHA, power=0.9)
    assert v.outcome == "inconclusive" and v.better is None and v.better_clears_margin is None
    assert v.better_widths is None and v.better_shape is None and v.within_margin is False
    # ranked by mean loss: x (mean gain 0.01) before y (0.00125); sds are the sample sds of the gains
    ranked = [noisy["x"], noisy["y"]]
    want = seeds_to_decide(
        [statistics.fmean(g) for g in ranked],
        [statistics.stdev(g) for g in ranked],
        margin=MARGIN,
        alpha=ALPHA,
        power=0.9,
    )
    assert want is not None and v.seeds_to_decide == want
    assert want != seeds_to_decide(
        [statistics.fmean(g) for g in ranked], [statistics.stdev(g) for g in ranked], margin=MARGIN, alpha=ALPHA
    )


def test_near_optimal_and_a_winner_below_the_margin() -> None:
    tight = [0.001, -0.001, 0.0005, -0.0005]
    res = [result(COS, COS_LOSS, baseline="cosine"), result(A, [c - g for c, g in zip(COS_LOSS, tight, strict=True)])]
    v = verdict(res, margin=MARGIN, alpha=ALPHA)
    assert v.outcome == "near_optimal" and v.near_optimal and v.within_margin is True
    assert v.better is None and v.n_seeds == 4 and v.confidence == pytest.approx(1 - 2 * ALPHA)
    # one candidate, shown better by a lower bound of 0.3 %, below the 1 % margin
    small = [0.004, 0.005, 0.0045, 0.0055]
    res = [result(COS, COS_LOSS, baseline="cosine"), result(A, [c - g for c, g in zip(COS_LOSS, small, strict=True)])]
    v = verdict(res, margin=MARGIN, alpha=ALPHA)
    mean, low, high = t_ends(small, 1 - ALPHA)
    assert 0 < low < math.log1p(MARGIN)
    assert v.outcome == "better" and v.better == A and v.better_clears_margin is False
    assert v.comparisons[0].gain.low == pytest.approx(math.expm1(low), rel=1e-9)


def test_a_lower_bound_exactly_on_the_margin_does_not_clear_it() -> None:
    # perplexities (found by a search) whose log ratio g has expm1(g) == 0.01 exactly; the same on
    # every seed: no spread, so the lower bound is the mean, shown above 0 but not above the margin
    cos_ppl, cand_ppl = 1.010000000000001, 1.0000000000000009
    assert math.expm1(math.log(cos_ppl) - math.log(cand_ppl)) == MARGIN

    def flat(label: str, ppl: float, baseline: str | None = None) -> ProfileResult:
        return ProfileResult(
            label, (8,), dict.fromkeys(range(4), math.log(ppl)), dict.fromkeys(range(4), ppl), baseline
        )

    v = verdict([flat(COS, cos_ppl, "cosine"), flat(A, cand_ppl)], margin=MARGIN, alpha=ALPHA)
    assert v.comparisons[0].gain.low == MARGIN
    assert v.outcome == "better" and v.better == A and v.better_clears_margin is False


def test_no_candidate_is_inconclusive_and_cosine_must_be_there() -> None:
    res = [result(COS, COS_LOSS, baseline="cosine")]
    v = verdict(res, margin=MARGIN, alpha=ALPHA)
    assert v.outcome == "inconclusive" and v.n_candidates == 0 and v.n_seeds == 4
    assert v.within_margin is False and v.seeds_to_decide is None and v.better is None
    assert math.isnan(v.regret.estimate) and v.regret.n == 4 and v.comparisons == ()
    assert v.confidence == pytest.approx(1 - 2 * ALPHA)
    with pytest.raises(ValueError, match="no re-evaluated cosine profile among the results: cannot judge cosine"):
        verdict([result(A, COS_LOSS)], margin=MARGIN, alpha=ALPHA)
    # the bootstrap with nothing to compare is refused as having no seeds
    with pytest.raises(ConfigError, match=r"needs at least 20 seeds \(got 0\)"):
        verdict(res, margin=MARGIN, alpha=ALPHA, method="bootstrap")


def test_seeds_restrict_the_decision() -> None:
    v = verdict(four(), margin=MARGIN, alpha=ALPHA, seeds=[0, 1, 2])
    assert v.n_seeds == 3 and by(v, A, COS).n == 3
    mean, low, _ = t_ends(GAIN[A][:3], LEVEL)
    assert by(v, A, COS).gain.low == pytest.approx(math.expm1(low), rel=1e-9)
    # a profile with none of the seeds drops out before anything is counted
    v = verdict(four(), margin=MARGIN, alpha=ALPHA, seeds=[3])
    assert v.n_profiles == 3 and UNI not in {r["label"] for r in v.table}


# ----------------------------------------------------------------------------- the bootstrap route


def test_the_bootstrap_rule_stays_the_bootstrap_rule() -> None:
    n = 20
    gains = [0.004 + 0.003 * math.sin(1.7 * s) + 0.0005 * (s % 3) for s in range(n)]
    cos = [2.0 + 0.01 * math.cos(s) for s in range(n)]
    around = [0.004 * math.sin(2.3 * s) for s in range(n)]  # a second candidate, not shown better
    res = [
        result(COS, cos, baseline="cosine"),
        result(A, [c - g for c, g in zip(cos, gains, strict=True)]),
        result(B, [c - g for c, g in zip(cos, around, strict=True)]),
    ]
    v = verdict(res, margin=MARGIN, alpha=ALPHA, method="bootstrap")
    c = by(v, A, COS)
    boot = bootstrap_ci(gains, confidence=1 - ALPHA)  # two candidates: each side at 1 - alpha / 2
    assert v.method == "bootstrap" and v.confidence == pytest.approx(1 - ALPHA)
    assert c.gain.low == pytest.approx(math.expm1(boot.low), rel=1e-9)
    assert c.gain.high == pytest.approx(math.expm1(boot.high), rel=1e-9)
    assert boot.low == pytest.approx(0.003598, abs=1e-6) and boot.high == pytest.approx(0.005480, abs=1e-6)
    mean, t_low, t_high = t_ends(gains, 1 - ALPHA / 2)  # the t route would give 0.003524, 0.005590
    assert abs(boot.low - t_low) > 5e-5 and abs(boot.high - t_high) > 5e-5
    # Bonferroni on the bootstrap bounds: no p-values, the decision from the ends
    assert math.isnan(c.p_better) and math.isnan(c.p_within) and c.to_dict()["p_better"] is None
    assert c.shown_better is True and c.within_margin is True  # 0.0036 > 0 and 0.0055 < log(1.01)
    # B's interval straddles 0 (-0.0012, 0.0012): not shown better, within the margin
    b_boot = bootstrap_ci(around, confidence=1 - ALPHA)
    assert b_boot.low < 0 < b_boot.high < math.log1p(MARGIN)
    assert by(v, B, COS).shown_better is False and by(v, B, COS).within_margin is True
    assert by(v, B, COS).gain.low == pytest.approx(math.expm1(b_boot.low), rel=1e-9)
    assert v.outcome == "better" and v.better == A and v.within_margin is True
    assert v.table[0]["p_better"] is None and v.table[0]["p_within"] is None
    loss = [x - y for x, y in zip(res[1].loss.values(), cos, strict=True)]
    want = bootstrap_ci(loss, confidence=1 - ALPHA)
    assert (c.loss_diff.low, c.loss_diff.high) == pytest.approx((want.low, want.high), rel=1e-9)
    # below 20 paired seeds the bootstrap is refused, by the fewest of any candidate
    short = [res[0], res[1], result(UNI, cos[:19])]
    with pytest.raises(ConfigError, match="needs at least 20 seeds"):
        verdict(short, margin=MARGIN, alpha=ALPHA, method="bootstrap")


# ----------------------------------------------------------------------------- baselines and levels


def test_baselines_are_recognised_by_tag_or_by_their_default_form() -> None:
    def r(label: str, profile: dict | None = None, baseline: str | None = None) -> ProfileResult:
        return ProfileResult(label, (8,), {0: 1.0}, {0: 2.7}, baseline=baseline, profile=profile or {})

    assert r("knots:k0=1", baseline="cosine").is_("cosine")  # the tag alone
    assert r(COS).is_("cosine") and r("uniform").is_("uniform")  # the family from the label
    assert not r("uniform").is_("cosine") and not r(COS).is_("uniform")
    assert r("x", {"family": "cosine", "params": {"start": 1.5, "end": 0.5}}).is_("cosine")
    assert r("x", {"family": "cosine", "params": {}}).is_("cosine")  # the defaults are 1.5 -> 0.5
    assert not r("x", {"family": "cosine", "params": {"start": 1.2, "end": 0.5}}).is_("cosine")
    assert not r("x", {"family": "cosine", "params": {"start": 1.5, "end": 0.6}}).is_("cosine")
    assert r("x", {"family": "uniform", "params": {"scale": 2}}).is_("uniform")  # other families: any form
    # the one with most seeds when several are
    two = ProfileResult(COS, (8,), {0: 1.0, 1: 1.1}, {0: 2.7, 1: 3.0}, baseline="cosine")
    assert find([r(COS), two, r(COS)], "cosine") is two and find([r(COS)], "uniform") is None
    assert find_reference([r(COS), two], None) is two and find_reference([r(COS), two], COS) is two
    assert find_reference([r(COS), two], "cosine:start=1.2,end=0.5") is None
    # a result's view of fewer seeds, its name and means
    only = two.only([1])
    assert only.loss == {1: 1.1} and only.ppl == {1: 3.0} and only.n_seeds == 1 and only.label == COS
    assert math.isnan(two.only([]).mean_loss) and math.isnan(two.only([]).mean_ppl)
    assert two.mean_ppl == pytest.approx(2.85) and two.name == COS
    assert ProfileResult(A, (8,), {}, {}, names=(A, COS, A)).name == f"{A} = {COS}"


def test_levels_by_either_name() -> None:
    assert resolve_levels() == (0.01, 0.05)
    assert resolve_levels(0.02, 0.1) == (0.02, 0.1)
    assert resolve_levels(threshold=0.03, confidence=0.9) == pytest.approx((0.03, 0.1))
    assert resolve_levels(0.03, threshold=0.03, alpha=0.1, confidence=0.9) == pytest.approx((0.03, 0.1))
    with pytest.raises(ConfigError, match="margin=0.02 and threshold=0.03 disagree"):
        resolve_levels(0.02, threshold=0.03)
    with pytest.raises(ConfigError, match="alpha=0.05 and confidence=0.9 disagree"):
        resolve_levels(alpha=0.05, confidence=0.9)
    with pytest.raises(ConfigError, match="margin=0 must lie in"):
        resolve_levels(0)
    v = verdict(four(), threshold=0.02, confidence=0.9)
    assert (v.margin, v.threshold, v.alpha) == (0.02, 0.02, pytest.approx(0.1))


def test_a_regime_is_stated_once_and_none_leaves_the_verdict() -> None:
    v = verdict(four(), margin=MARGIN, alpha=ALPHA)
    assert v.with_regime(None) is v
    clause = "regime: test"
    w = v.with_regime(_FakeRegime(clause))  # type: ignore[arg-type]  # only its clause and to_dict are read
    assert w.headline == f"{v.headline}; {clause}" and w.to_dict()["regime"] == {"clause": clause}


class _FakeRegime:
    """Stands in for `analysis.regime.Regime`: the verdict reads only these two."""

    def __init__(self, clause: str) -> None:
        self._clause = clause

    def clause(self) -> str:
        return self._clause

    def to_dict(self) -> dict[str, str]:
        return {"clause": self._clause}
