"""Pins of the learning-rate rule's statistics (`configs/lr_rule.py`), worked out by hand or
recomputed by an independent route (numpy's polynomial fit and percentiles): the residual sd of
the two-way fit rate + seed, the parabola's vertex beside a diverged neighbour, the quantile,
and the parametric bootstrap's interval draw by draw."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from tlmsearch.configs.lr_rule import (
    _quantile,
    bootstrap_interval,
    chosen_log2,
    residual_sd,
)

INF = math.inf


def test_residual_sd_of_two_rates_and_two_seeds_by_hand() -> None:
    # grand mean 1.2, rate means 1.1 / 1.3, seed means 1.05 / 1.35: residuals +-0.05, ss 0.01, 1 df
    sd, df = residual_sd([[1.0, 1.2], [1.1, 1.5]])
    assert df == 1
    assert sd == pytest.approx(0.1, rel=1e-12)


def test_residual_sd_leaves_out_a_rate_with_a_diverged_seed() -> None:
    assert residual_sd([[1.0, 1.2], [INF, 0.1], [1.1, 1.5]]) == pytest.approx((0.1, 1), rel=1e-12)


def test_residual_sd_degrees_of_freedom_are_rates_less_one_times_seeds_less_one() -> None:
    losses = [[1.0, 1.3, 0.9], [1.1, 1.2, 1.0], [0.95, 1.25, 1.02]]
    sd, df = residual_sd(losses)
    assert df == 4
    a = np.asarray(losses)
    resid = a - a.mean(axis=1, keepdims=True) - a.mean(axis=0, keepdims=True) + a.mean()
    assert sd == pytest.approx(math.sqrt((resid**2).sum() / 4), rel=1e-12)


@pytest.mark.parametrize(
    "losses",
    [[], [[1.0, 1.1]], [[INF, INF], [INF, INF]], [[INF, 1.0], [1.0, INF], [1.2, 1.1]], [[1.0], [1.1], [1.2]]],
)
def test_residual_sd_without_two_finite_rates_of_two_seeds_is_nan_with_no_df(losses: list[list[float]]) -> None:
    sd, df = residual_sd(losses)
    assert math.isnan(sd) and df == 0


@pytest.mark.parametrize("means", [[INF, 1.0, 1.1, 1.3], [1.3, 1.0, INF, 1.2]])
def test_a_diverged_neighbour_keeps_the_best_rate_itself(means: list[float]) -> None:
    assert chosen_log2([1.0, 2.0, 4.0, 8.0], means, seeds=3) == 1.0


def test_the_vertex_through_the_best_and_its_neighbours_by_hand() -> None:
    # x = 0, 1, 2 and y = 1.2, 1.0, 1.1: y = 1.2 - 0.35 x + 0.15 x^2, vertex 0.35 / 0.3 = 7/6
    assert chosen_log2([1.0, 2.0, 4.0], [1.2, 1.0, 1.1], seeds=2) == pytest.approx(7 / 6, rel=1e-12)
    assert chosen_log2([1.0, 2.0, 4.0], [1.2, 1.0, 1.1], seeds=1) == 1.0


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([0.0, 10.0], 0.3, 3.0),
        ([1.0, 2.0, 4.0, 8.0], 0.5, 3.0),
        ([1.0, 2.0, 4.0, 8.0], 0.9, 6.8),
        ([1.0, 2.0, 3.0, 4.0, 5.0], 0.25, 2.0),
        ([1.0, 2.0, 4.0], 1.0, 4.0),
        ([1.0, 2.0, 4.0], 0.0, 1.0),
    ],
)
def test_quantile_interpolates_between_order_statistics(values: list[float], q: float, expected: float) -> None:
    assert _quantile(values, q) == pytest.approx(expected, rel=1e-12)
    assert _quantile(values, q) == pytest.approx(float(np.percentile(values, 100 * q)), rel=1e-12)


def test_noise_free_losses_give_an_interval_of_the_choice_alone() -> None:
    # rate + seed with no interaction: residual sd 0, every replicate makes the same choice, 2 ** (7/6)
    losses = [[1.2 + s, 1.0 + s, 1.1 + s] for s in (0.0, 0.25)]
    rows = [list(col) for col in zip(*losses, strict=True)]
    lo, hi = bootstrap_interval([1.0, 2.0, 4.0], rows)
    assert lo == pytest.approx(2 ** (7 / 6), rel=1e-9)
    assert hi == pytest.approx(2 ** (7 / 6), rel=1e-9)


def reference_interval(rates: list[float], losses: list[list[float]]) -> tuple[float, float]:
    """The rule's parametric bootstrap by another route: numpy's two-way residuals, a quadratic
    fit by `np.polyfit`, numpy's percentiles; the same generator, drawn in the same order (one
    gamma for the sd, then one normal per finite mean) 1000 times, the 2.5 and 97.5 percentiles."""
    a = np.asarray([row for row in losses if all(map(math.isfinite, row))])
    resid = a - a.mean(axis=1, keepdims=True) - a.mean(axis=0, keepdims=True) + a.mean()
    df = (a.shape[0] - 1) * (a.shape[1] - 1)
    sd = math.sqrt((resid**2).sum() / df)
    n = len(losses[0])
    means = [float(np.mean(row)) if all(map(math.isfinite, row)) else INF for row in losses]
    xs = np.log2(rates)
    rng = random.Random(0)
    picks = []
    for _ in range(1000):
        chi2 = 2.0 * rng.gammavariate(df / 2.0, 1.0)
        scale = sd * math.sqrt(df / chi2) / math.sqrt(n)
        drawn = [m + rng.gauss(0.0, scale) if math.isfinite(m) else m for m in means]
        b = int(np.argmin(drawn))
        if 0 < b < len(rates) - 1 and math.isfinite(drawn[b - 1]) and math.isfinite(drawn[b + 1]):
            c2, c1, _ = np.polyfit(xs[b - 1 : b + 2], drawn[b - 1 : b + 2], 2)
            picks.append(-c1 / (2 * c2))
        else:
            picks.append(float(xs[b]))
    return 2.0 ** float(np.percentile(picks, 2.5)), 2.0 ** float(np.percentile(picks, 97.5))


@pytest.mark.parametrize(
    "losses",
    [
        # ladder8's third point, as its calibration recorded it (rounded): the best at 0.004
        [
            [1.50095, 1.49175, 1.49605],
            [1.42784, 1.42362, 1.43076],
            [1.40261, 1.39474, 1.40046],
            [1.38174, 1.38657, 1.38032],
            [1.40876, 1.42003, 1.41141],
        ],
        # noisy enough that the best moves between replicates, a diverged rate at the top
        [[1.30, 1.36], [1.22, 1.31], [1.25, 1.27], [1.24, 1.33], [INF, INF]],
    ],
)
def test_the_bootstrap_interval_agrees_with_an_independent_recomputation(losses: list[list[float]]) -> None:
    rates = [0.0005 * 2**i for i in range(len(losses))]
    got = bootstrap_interval(rates, losses)
    assert got is not None
    assert got == pytest.approx(reference_interval(rates, losses), rel=1e-9)
    assert got[0] < got[1]


def test_the_bootstrap_interval_needs_two_seeds_and_a_residual_degree_of_freedom() -> None:
    assert bootstrap_interval([1.0, 2.0], [[1.0], [1.1]]) is None  # one seed
    assert bootstrap_interval([1.0, 2.0], [[1.0, 1.1], [INF, 1.0]]) is None  # one finite rate: no df
    assert bootstrap_interval([1.0, 2.0], [[1.0, 1.1], [1.2, 1.2]]) is not None  # 2 seeds, 1 df
    assert bootstrap_interval([1.0, 2.0], [[INF, INF], [INF, INF]]) is None  # every rate diverged
