"""Paired statistics, Pareto fronts and the verdict on synthetic inputs with known answers."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tlmsearch.analysis import (
    ProfileResult,
    bootstrap_ci,
    dominates,
    mean_ci,
    paired_difference,
    paired_ratio,
    pareto_front,
    spearman,
    verdict,
)
from tlmsearch.analysis.stats import MIN_BOOTSTRAP_SEEDS, rank_correlation, ranks, t_quantile
from tlmsearch.errors import ConfigError

# ----------------------------------------------------------------------------- t distribution


@pytest.mark.slow
def test_t_quantile_known_values() -> None:
    # textbook table values (the quantiles come from scipy.stats.t)
    assert t_quantile(0.975, 1) == pytest.approx(12.706, abs=1e-3)
    assert t_quantile(0.975, 2) == pytest.approx(4.303, abs=1e-3)
    assert t_quantile(0.975, 10) == pytest.approx(2.228, abs=1e-3)
    assert t_quantile(0.025, 10) == pytest.approx(-2.228, abs=1e-3)
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)


def test_mean_ci_known_answer() -> None:
    iv = mean_ci([1.0, 2.0, 3.0])
    # mean 2, sd 1, sem 1/sqrt(3), t(0.975, 2) = 4.3027
    assert iv.estimate == 2.0
    assert iv.high - 2.0 == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert iv.low == pytest.approx(4.0 - iv.high)
    one = mean_ci([5.0])
    assert one.estimate == 5.0 and one.low == -math.inf and one.high == math.inf


def test_t_interval_covers_true_difference_at_nominal_rate() -> None:
    # 2000 synthetic experiments with 3 paired seeds each; true difference 0.05
    rng = random.Random(0)
    true, hits, trials = 0.05, 0, 2000
    for _ in range(trials):
        shared = [rng.gauss(3.0, 0.5) for _ in range(3)]  # seed effect both profiles share
        a = {s: shared[s] + true + rng.gauss(0, 0.02) for s in range(3)}
        b = {s: shared[s] + rng.gauss(0, 0.02) for s in range(3)}
        hits += paired_difference(a, b).covers(true)
    assert 0.93 <= hits / trials <= 0.97


def test_pairing_uses_common_seeds_only() -> None:
    a = {0: 10.0, 1: 11.0, 2: 12.0, 7: 99.0}
    b = {0: 9.0, 1: 10.0, 2: 11.0, 5: -1.0}
    iv = paired_difference(a, b)
    assert iv.n == 3 and iv.estimate == pytest.approx(1.0) and iv.low == pytest.approx(1.0)
    assert paired_ratio({0: 11.0, 1: 22.0}, {0: 10.0, 1: 20.0}).estimate == pytest.approx(0.1)
    with pytest.raises(ValueError):
        paired_difference({0: 1.0}, {1: 1.0})


def test_bootstrap_ci_is_deterministic_and_brackets_the_mean() -> None:
    rng = random.Random(5)
    xs = [rng.gauss(0.3, 0.1) for _ in range(MIN_BOOTSTRAP_SEEDS)]
    a, b = bootstrap_ci(xs, seed=3), bootstrap_ci(xs, seed=3)
    assert a == b
    assert a.low <= a.estimate <= a.high
    assert min(xs) <= a.low and a.high <= max(xs)
    with pytest.raises(ConfigError, match=f"at least {MIN_BOOTSTRAP_SEEDS}"):
        bootstrap_ci(xs[:5])


def test_bca_coverage_is_poor_below_the_minimum_and_near_nominal_at_it() -> None:
    """The coverage simulation behind MIN_BOOTSTRAP_SEEDS (`python -m bench.bench_verdict` has the
    full table): 400 normal studies a size, scipy's BCa at 95%, Monte-Carlo SE about 1.2 points."""
    np = pytest.importorskip("numpy")
    from scipy import stats

    def coverage(n: int) -> float:
        x = np.random.default_rng(n).normal(0.0, 1.0, (400, n))
        ci = stats.bootstrap((x,), np.mean, axis=-1, method="BCa", n_resamples=999, rng=np.random.default_rng(1))
        return float(np.mean((ci.confidence_interval.low <= 0) & (0 <= ci.confidence_interval.high)))

    assert coverage(3) < 0.85  # a "95%" interval that misses a quarter of the time
    assert coverage(MIN_BOOTSTRAP_SEEDS) > 0.90


def test_spearman_and_ranks() -> None:
    assert ranks([3.0, 1.0, 2.0, 2.0]) == [4.0, 1.0, 2.5, 2.5]
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    from tlmsearch.profiles.shape import spearman as pure_spearman

    x, y = [1.0, 5.0, 2.0, 2.0, 8.0, 3.0], [2.0, 4.0, 1.0, 3.0, 9.0, 3.0]
    assert spearman(x, y) == pytest.approx(pure_spearman(x, y))  # scipy and the profiles' pure one agree


def test_rank_correlation_has_a_bootstrap_interval_only_with_enough_points() -> None:
    rng = random.Random(2)
    x = [float(i) for i in range(12)]
    y = [v + rng.gauss(0, 2.0) for v in x]
    rc = rank_correlation(x, y, n_resamples=999)
    assert rc.n == 12 and rc.interval is not None
    assert -1.0 <= rc.interval.low <= rc.rho <= rc.interval.high <= 1.0
    few = rank_correlation(x[:4], y[:4])
    assert few.interval is None and few.n == 4 and few.to_dict()["interval"] is None


# ----------------------------------------------------------------------------- pareto


def _brute_force(points: list[tuple[float, ...]], minimize: tuple[bool, ...]) -> list[int]:
    return [i for i, p in enumerate(points) if not any(dominates(q, p, minimize) for q in points)]


def test_pareto_ties_and_duplicates() -> None:
    pts = [(1, 2), (1, 2), (2, 1), (2, 2), (2, 2), (0, 5), (0, 5), (3, 3), (0, 6)]
    # duplicates on the front both stay; duplicates of a dominated point both go
    assert pareto_front(pts) == [0, 1, 2, 5, 6]
    assert pareto_front([(1.0, 1.0)] * 3) == [0, 1, 2]
    assert pareto_front([]) == []
    # maximise the second objective (e.g. tokens/s)
    assert pareto_front([(1, 10), (2, 20), (2, 5), (3, 20)], minimize=(True, False)) == [0, 1]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=25),
    st.tuples(st.booleans(), st.booleans()),
)
@pytest.mark.slow
def test_pareto_2d_matches_brute_force(points: list[tuple[int, int]], minimize: tuple[bool, bool]) -> None:
    pts = [tuple(map(float, p)) for p in points]
    assert pareto_front(pts, minimize) == _brute_force(pts, minimize)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)), max_size=20))
def test_pareto_3d_matches_brute_force(points: list[tuple[int, int, int]]) -> None:
    pts = [tuple(map(float, p)) for p in points]
    assert pareto_front(pts) == _brute_force(pts, (True, True, True))


def test_pareto_exhaustive_small_grid() -> None:
    grid = [(float(a), float(b)) for a, b in itertools.product(range(3), repeat=2)]
    for k in range(1, 5):
        for combo in itertools.combinations_with_replacement(grid, k):
            assert pareto_front(list(combo)) == _brute_force(list(combo), (True, True))


# ----------------------------------------------------------------------------- verdict


def _result(
    label: str,
    ppl: list[float],
    *,
    baseline: str | None = None,
    search: float | None = None,
    widths: tuple[int, ...] = (64, 64),
) -> ProfileResult:
    family = label.split(":", 1)[0]
    return ProfileResult(
        label=label,
        widths=widths,
        baseline=baseline,
        loss={s: math.log(p) for s, p in enumerate(ppl)},
        ppl=dict(enumerate(ppl)),
        profile={"family": family, "params": {}},
        shape={"front_load": 0.1, "monotonicity": 1.0},
        search_score=search,
    )


def test_tie_gives_near_optimal() -> None:
    rng = random.Random(1)
    seeds = [20.0 + rng.gauss(0, 1.0) for _ in range(5)]
    cos = _result("cosine", [s * (1 + rng.gauss(0, 0.002)) for s in seeds], baseline="cosine")
    other = _result("knots:a=1", [s * (1 + rng.gauss(0, 0.002)) for s in seeds])
    uni = _result("uniform", [s * 1.05 for s in seeds], baseline="uniform")
    v = verdict([cos, other, uni], margin=0.01)
    assert v.outcome == "near_optimal" and v.near_optimal and v.within_margin and v.better is None
    assert v.headline.startswith("cosine is near-optimal within the 1.0% margin")
    assert v.cosine_rank in (1, 2) and v.n_profiles == 3 and v.n_candidates == 2
    assert v.regret.high < 0.01 and v.seeds_to_decide is None
    d = v.to_dict()
    assert d["outcome"] == "near_optimal" and d["near_optimal"] is True and d["margin"] == d["threshold"] == 0.01


def test_clear_winner_gives_better_profile_found() -> None:
    seeds = [20.0, 22.0, 19.0]
    cos = _result("cosine:start=1.5,end=0.5", seeds)  # recognised without a baseline tag
    win = _result(
        "knots:a=2", [s / 1.10 * (1 + e) for s, e in zip(seeds, [0.001, -0.002, 0.0], strict=True)], widths=(100, 28)
    )
    uni = _result("uniform", [s * 1.03 for s in seeds])
    v = verdict([uni, cos, win], threshold=0.01)
    assert v.outcome == "better" and not v.near_optimal and v.better_clears_margin
    assert v.better == "knots:a=2" and v.best == "knots:a=2"
    assert v.better_widths == (100, 28) and v.better_shape == {"front_load": 0.1, "monotonicity": 1.0}
    assert v.cosine_rank == 2
    assert v.regret.estimate == pytest.approx(0.10, abs=0.005) and v.regret.low > 0.01
    assert v.headline.startswith("a better profile than cosine exists") and "also clears the 1.0% margin" in v.headline
    assert [row["label"] for row in v.table] == ["knots:a=2", "cosine:start=1.5,end=0.5", "uniform"]
    d = v.to_dict()
    assert d["near_optimal"] is False and d["outcome"] == "better" and d["better_widths"] == [100, 28]


def test_small_but_certain_gain_is_better_without_clearing_the_margin() -> None:
    seeds = [20.0, 22.0, 19.0, 21.0]
    cos = _result("cosine", seeds, baseline="cosine")
    tiny = _result("linear", [s / 1.004 for s in seeds])  # 0.4% better, no noise: CI = [0.4%, 0.4%]
    v = verdict([cos, tiny], margin=0.01)
    assert v.outcome == "better" and v.better == "linear" and v.best == "linear" and v.cosine_rank == 2
    assert v.better_clears_margin is False and v.within_margin and not v.near_optimal
    assert "does not clear the 1.0% margin" in v.headline and "cosine is within it" in v.headline
    assert verdict([cos, tiny], margin=0.001).better_clears_margin is True


def test_search_rank_correlation_is_named_for_what_it_measures() -> None:
    rs = [_result("cosine", [10.0, 11.0], baseline="cosine", search=2.30)]
    rs += [_result(f"knots:a={i}", [10.0 + i, 11.0 + i], search=2.30 + 0.01 * i) for i in range(1, 4)]
    v = verdict(rs)
    assert v.n_spearman == 4 and v.spearman == pytest.approx(1.0)
    assert v.rank_correlation is not None and v.rank_correlation.interval is None  # 4 points: no interval
    same = [dataclasses.replace(r, steps=300, search_steps=300) for r in rs]
    v_same = verdict(same)
    assert v_same.rank_correlation_measures.startswith("seed-to-seed reliability")
    assert v_same.search_optimism is not None
    longer = [dataclasses.replace(r, steps=1200, search_steps=300) for r in rs]
    v_long = verdict(longer)
    what = v_long.rank_correlation_measures
    assert what.startswith("proxy fidelity") and "300 -> 1200" in what
    assert v_long.search_optimism is None and v_long.to_dict()["search_optimism"] is None  # unlike with unlike


def test_verdict_needs_cosine() -> None:
    with pytest.raises(ValueError, match="cosine"):
        verdict([_result("uniform", [1.0, 2.0])])


def test_bootstrap_method_in_the_verdict() -> None:
    rng = random.Random(4)
    seeds = [20.0 + rng.gauss(0, 1) for _ in range(MIN_BOOTSTRAP_SEEDS)]
    cos = _result("cosine", seeds, baseline="cosine")
    win = _result("knots:a=2", [s / 1.10 * (1 + rng.gauss(0, 0.002)) for s in seeds])
    v = verdict([cos, win], method="bootstrap")
    assert v.method == "bootstrap" and v.outcome == "better"
    assert v.regret.low <= v.regret.estimate <= v.regret.high
    with pytest.raises(ValueError, match="method"):
        verdict([cos, win], method="magic")
    few = [_result("cosine", seeds[:5], baseline="cosine"), _result("knots:a=2", seeds[:5])]
    with pytest.raises(ConfigError, match=f"at least {MIN_BOOTSTRAP_SEEDS} seeds"):
        verdict(few, method="bootstrap")


# ----------------------------------------------------------------------------- the old failure cases


def _reference_like() -> list[ProfileResult]:
    """The committed reference run's verify records (runs/reference/quickstart), 2 seeds each."""
    loss = {
        "cosine": [1.8684601783752441, 1.8475266098976135],
        "linear:start=1.5,end=0.5": [1.8406311869621277, 1.8270326256752014],
        "uniform": [1.8717159628868103, 1.8477227687835693],
    }
    return [
        _result(k, [math.exp(x) for x in v], baseline=k if k in ("cosine", "uniform") else None)
        for k, v in loss.items()
    ]


def test_a_wide_interval_is_inconclusive_not_near_optimal() -> None:
    # the case: linear +2.45% [-2.33%, +7.22%] at threshold 1% was called "near-optimal"
    v = verdict(_reference_like(), threshold=0.01)
    assert v.outcome == "inconclusive" and not v.near_optimal and v.to_dict()["near_optimal"] is False
    g = next(c for c in v.comparisons if c.label.startswith("linear") and c.reference == "cosine").gain
    assert g.estimate == pytest.approx(0.0245, abs=5e-4) and g.low < 0 < 0.07 < g.high
    assert v.seeds_to_decide is not None and v.seeds_to_decide >= 2
    assert v.headline.startswith("inconclusive") and "seeds per profile would decide it" in v.headline


def test_a_candidate_identical_to_cosine_keeps_the_headlines_largest_p_a_number() -> None:
    # at tiny shapes two profiles can round to the same widths: the paired differences are all 0,
    # p_within is 0.0 exactly, and the headline printed "largest Holm-adjusted p nan"
    rng = random.Random(2)
    seeds = [20.0 + rng.gauss(0, 1.0) for _ in range(4)]
    cos = _result("cosine", seeds, baseline="cosine")
    same = _result("linear:start=1.5,end=0.5", list(seeds))
    near = _result("knots:a=1", [s * (1.001 + rng.gauss(0, 0.0005)) for s in seeds])  # ranked after `same`
    v = verdict([same, cos, near], margin=0.01)
    assert v.outcome == "near_optimal"
    largest = float(v.headline.split("largest Holm-adjusted p ")[1].split(")")[0])
    assert 0.0 < largest < 0.05


def test_an_inconclusive_headline_names_cosine_when_cosine_leads_by_mean() -> None:
    # the reference study's Hope-attention: cosine best by mean, every other candidate's gain an
    # interval across zero; the headline must not call the runner-up "the best candidate by mean"
    loss = {
        "cosine": [2.300, 2.340, 2.310],
        "linear:start=1.5,end=0.5": [2.330, 2.320, 2.350],
        "uniform": [2.36, 2.31, 2.37],
    }
    rs = [
        _result(k, [math.exp(x) for x in v], baseline=k if k in ("cosine", "uniform") else None)
        for k, v in loss.items()
    ]
    v = verdict(rs, threshold=0.01)
    assert v.outcome == "inconclusive"
    assert "; cosine leads by mean; the best other candidate, linear:start=1.5,end=0.5, gains -" in v.headline
    assert "the best candidate by mean" not in v.headline
    v = verdict(_reference_like(), threshold=0.01)  # a candidate leads: named as the best by mean
    assert "; the best candidate by mean, linear:start=1.5,end=0.5, gains +2.4" in v.headline


def test_one_seed_is_never_near_optimal() -> None:
    same = [20.0]
    v = verdict([_result("cosine", same, baseline="cosine"), _result("uniform", same, baseline="uniform")])
    assert v.outcome == "inconclusive" and "one seed gives no spread" in v.headline
    assert v.seeds_to_decide is None


def test_regret_has_an_interval_when_cosine_has_the_best_mean() -> None:
    cos = _result("cosine", [20.0, 22.0, 19.0], baseline="cosine")
    noisy = _result("linear", [20.5, 21.5, 19.9])  # worse on average, with a wide spread
    v = verdict([cos, noisy])
    assert v.best == "cosine" and v.regret.estimate < 0
    assert v.regret.low < v.regret.estimate < v.regret.high and v.regret.high > 0.0  # not 0 [0, 0]


def test_the_stated_level_is_the_level_used() -> None:
    seeds = [20.0, 22.0, 19.0, 21.0]
    cos = _result("cosine", seeds, baseline="cosine")
    win = _result("knots:a=2", [s / 1.10 * (1 + 0.001 * (-1) ** i) for i, s in enumerate(seeds)])
    v = verdict([cos, win], alpha=0.1)
    assert v.confidence == pytest.approx(0.8) and "80% interval" in v.headline and "alpha 0.1" in v.headline
    assert "95%" not in v.headline
    three = verdict([cos, win, _result("uniform", seeds, baseline="uniform")], alpha=0.05)
    assert three.confidence == pytest.approx(0.95) and "95% interval" in three.headline  # 1 - 2 * 0.05 / 2
    assert verdict([cos, win], confidence=0.9).alpha == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"margin": 0.0}, "margin=0.0 must lie in (0, 1)"),
        ({"margin": -0.01}, "margin=-0.01 must lie in (0, 1)"),
        ({"alpha": 0.5}, "alpha=0.5 must lie in (0, 0.5)"),
        ({"alpha": 0.0}, "alpha=0.0 must lie in (0, 0.5)"),
        ({"margin": 0.01, "threshold": 0.02}, "disagree"),
        ({"alpha": 0.05, "confidence": 0.8}, "disagree"),
    ],
)
def test_bad_levels_are_refused_in_one_line(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as err:
        verdict(_reference_like(), **kwargs)
    assert "\n" not in str(err.value)
