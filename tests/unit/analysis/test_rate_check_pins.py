"""Pins of the rate check (`analysis/rate_check.py`) worked out by hand: the level's bounds,
a cell's sentence with and without its missing and failed runs, the default alpha of a
verify.json entry, how the paired seeds read, and that its records are frozen."""

from __future__ import annotations

import dataclasses
import math

import pytest

from tlmsearch.analysis.rate_check import RateCell, RateCheck, _seeds, check_confidence, rate_checks
from tlmsearch.analysis.stats import Interval


@pytest.mark.parametrize(("alpha", "level"), [(0.05, 1 - 0.05 / 3), (0.3, 0.9), (0.49, 1 - 0.49 / 3)])
def test_the_level_is_one_minus_alpha_over_three(alpha: float, level: float) -> None:
    assert check_confidence(alpha) == pytest.approx(level, rel=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 0.6, 1.2, -0.05])
def test_an_alpha_outside_zero_to_a_half_is_refused(alpha: float) -> None:
    with pytest.raises(ValueError, match=r"must lie in \(0, 0.5\)"):
        check_confidence(alpha)


def cell(n: int, **kw: int) -> RateCell:
    low, high = (0.002, 0.018) if n > 1 else (-math.inf, math.inf)
    gap = Interval(0.01, low, high, n, 0.98)
    return RateCell(1.0, 0.002, tuple(range(1, n + 1)), gap, 2.30, 2.29, **kw)


def test_a_decided_cell_reads_its_gap_gain_and_seeds() -> None:
    # expm1(0.01) = 0.010050: +1.01 %
    assert cell(2).text() == "0.002 (base): better, +0.0100 nats [+0.0020, +0.0180] (+1.01%), 2 seeds"


def test_a_cell_of_one_seed_says_it_decides_nothing() -> None:
    assert cell(1).text() == "0.002 (base): one seed, undecided, +0.0100 nats [n/a, n/a] (+1.01%), 1 seed"


@pytest.mark.parametrize(
    ("kw", "tail"),
    [
        ({"missing": 2}, " (2 not trained yet)"),
        ({"failed": 1}, " (1 run diverged or failed)"),
        ({"failed": 3, "missing": 1}, " (3 runs diverged or failed; 1 not trained yet)"),
    ],
)
def test_a_cell_says_what_it_still_lacks(kw: dict[str, int], tail: str) -> None:
    assert cell(2, **kw).text() == "0.002 (base): better, +0.0100 nats [+0.0020, +0.0180] (+1.01%), 2 seeds" + tail


def test_a_cell_and_a_check_are_frozen() -> None:
    c = cell(2)
    assert (c.failed, c.missing) == (0, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.missing = 1  # type: ignore[misc]
    check = RateCheck("g", "knots", "cosine", 0.002, "configured", (1, 2), 0.05, (c,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        check.alpha = 0.1  # type: ignore[misc]


def test_an_entry_without_alpha_uses_0_05() -> None:
    doc = {"base_lr": 0.002, "seeds": [1, 2], "groups": [{"candidate": "knots", "cosine": "cosine", "runs": {}}]}
    (check,) = rate_checks([], doc)
    assert check.alpha == 0.05 and check.confidence == pytest.approx(1 - 0.05 / 3)
    assert check.rate_source == "configured" and check.group == ""
    assert [c.missing for c in check.cells] == [0, 0, 0]


@pytest.mark.parametrize(
    ("seeds", "text"),
    [((), "none"), ((3,), "3"), ((3, 4), "3, 4"), ((1, 2, 3), "1..3"), ((1, 3, 4), "1, 3, 4"), ((5, 6, 7, 8), "5..8")],
)
def test_paired_seeds_read_as_a_range_from_three_on(seeds: tuple[int, ...], text: str) -> None:
    assert _seeds(seeds) == text
