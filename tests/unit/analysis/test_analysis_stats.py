"""Paired statistics, Pareto fronts and the verdict on synthetic inputs with known answers."""

from __future__ import annotations

import itertools
import math
import random

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
from tlmsearch.analysis.stats import ranks, t_cdf, t_quantile

# ----------------------------------------------------------------------------- t distribution


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7, 30, 500])
@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995])
def test_t_quantile_matches_scipy(df: int, p: float) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    assert t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-8)
    assert t_quantile(1 - p, df) == pytest.approx(scipy_stats.t.ppf(1 - p, df), rel=1e-8)
    assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-10)


def test_t_quantile_known_values() -> None:
    # textbook table values, independent of scipy
    assert t_quantile(0.975, 1) == pytest.approx(12.706, abs=1e-3)
    assert t_quantile(0.975, 2) == pytest.approx(4.303, abs=1e-3)
    assert t_quantile(0.975, 10) == pytest.approx(2.228, abs=1e-3)


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
    xs = [0.1, 0.3, 0.2, 0.5, 0.4, 0.3, 0.2]
    a, b = bootstrap_ci(xs, seed=3), bootstrap_ci(xs, seed=3)
    assert a == b
    assert a.low <= a.estimate <= a.high
    assert min(xs) <= a.low and a.high <= max(xs)


def test_spearman_and_ranks() -> None:
    assert ranks([3.0, 1.0, 2.0, 2.0]) == [4.0, 1.0, 2.5, 2.5]
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    scipy_stats = pytest.importorskip("scipy.stats")
    x, y = [1.0, 5.0, 2.0, 2.0, 8.0, 3.0], [2.0, 4.0, 1.0, 3.0, 9.0, 3.0]
    assert spearman(x, y) == pytest.approx(scipy_stats.spearmanr(x, y)[0])


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
    seeds = [20.0 + rng.gauss(0, 1.0) for _ in range(3)]
    cos = _result("cosine", [s * (1 + rng.gauss(0, 0.002)) for s in seeds], baseline="cosine")
    other = _result("knots:a=1", [s * (1 + rng.gauss(0, 0.002)) for s in seeds])
    uni = _result("uniform", [s * 1.05 for s in seeds], baseline="uniform")
    v = verdict([cos, other, uni], threshold=0.01)
    assert v.near_optimal and v.better is None
    assert v.headline.startswith("cosine is near-optimal")
    assert v.cosine_rank in (1, 2) and v.n_profiles == 3
    assert v.regret.low <= 0.01


def test_clear_winner_gives_better_profile_found() -> None:
    seeds = [20.0, 22.0, 19.0]
    cos = _result("cosine:start=1.5,end=0.5", seeds)  # recognised without a baseline tag
    win = _result(
        "knots:a=2", [s / 1.10 * (1 + e) for s, e in zip(seeds, [0.001, -0.002, 0.0], strict=True)], widths=(100, 28)
    )
    uni = _result("uniform", [s * 1.03 for s in seeds])
    v = verdict([uni, cos, win], threshold=0.01)
    assert not v.near_optimal
    assert v.better == "knots:a=2" and v.best == "knots:a=2"
    assert v.better_widths == (100, 28) and v.better_shape == {"front_load": 0.1, "monotonicity": 1.0}
    assert v.cosine_rank == 2
    assert v.regret.estimate == pytest.approx(0.10, abs=0.005) and v.regret.low > 0.01
    assert v.headline.startswith("a better profile was found")
    assert [row["label"] for row in v.table] == ["knots:a=2", "cosine:start=1.5,end=0.5", "uniform"]
    d = v.to_dict()
    assert d["near_optimal"] is False and d["better_widths"] == [100, 28]


def test_small_but_certain_gain_below_threshold_is_near_optimal() -> None:
    seeds = [20.0, 22.0, 19.0, 21.0]
    cos = _result("cosine", seeds, baseline="cosine")
    tiny = _result("linear", [s / 1.004 for s in seeds])  # 0.4% better, no noise: CI = [0.4%, 0.4%]
    v = verdict([cos, tiny], threshold=0.01)
    assert v.near_optimal and v.best == "linear" and v.cosine_rank == 2
    assert verdict([cos, tiny], threshold=0.001).better == "linear"


def test_spearman_between_search_and_verified_scores() -> None:
    rs = [_result("cosine", [10.0, 11.0], baseline="cosine", search=2.30)]
    rs += [_result(f"knots:a={i}", [10.0 + i, 11.0 + i], search=2.30 + 0.01 * i) for i in range(1, 4)]
    v = verdict(rs)
    assert v.n_spearman == 4 and v.spearman == pytest.approx(1.0)


def test_verdict_needs_cosine() -> None:
    with pytest.raises(ValueError, match="cosine"):
        verdict([_result("uniform", [1.0, 2.0])])


def test_bootstrap_method_in_the_verdict() -> None:
    seeds = [20.0, 22.0, 19.0, 21.0, 20.5, 19.5]
    cos = _result("cosine", seeds, baseline="cosine")
    win = _result("knots:a=2", [s / 1.10 * (1 + 0.001 * (-1) ** i) for i, s in enumerate(seeds)])
    v = verdict([cos, win], method="bootstrap")
    assert v.method == "bootstrap" and not v.near_optimal
    assert v.regret.low <= v.regret.estimate <= v.regret.high
    with pytest.raises(ValueError, match="method"):
        verdict([cos, win], method="magic")


def test_wide_intervals_are_flagged_in_a_near_optimal_verdict() -> None:
    cos = _result("cosine", [20.0, 22.0, 19.0], baseline="cosine")
    noisy = _result("linear", [19.0, 23.5, 18.0])  # better on average, but not with confidence
    v = verdict([cos, noisy])
    assert v.near_optimal and v.regret.high > 0.01
    assert "the intervals are wide" in v.headline
    tight = verdict([cos, _result("uniform", [20.2, 22.2, 19.2])])
    assert tight.near_optimal and "wide" not in tight.headline
