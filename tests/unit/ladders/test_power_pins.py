"""Pins of the trend test's power search (`ladders/power.py`) against a simulation of known
answer: `simulate` replaced by a power curve worked out by hand, so the bisection's result, its
edges and what it asks the simulation for are checked exactly and fast."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest

import tlmsearch.ladders.power as power_mod
from tlmsearch.ladders.power import trend_power

X = [11.0, 12.0, 12.5, 13.0]


def fake(curve: Any, calls: list[dict[str, Any]]) -> Any:
    def simulate(compute: list[float], sds: list[float], **kw: Any) -> SimpleNamespace:
        calls.append({"compute": compute, "sds": sds, **kw})
        return SimpleNamespace(trend_rate=curve(kw["slope"]))

    return simulate


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    monkeypatch.setattr(power_mod, "simulate", fake(lambda s: min(1.0, 0.8 * s / 0.2399), out))
    return out


def test_the_smallest_slope_on_a_grid_of_1_4096_with_80_percent_power(calls: list[dict[str, Any]]) -> None:
    # power reaches 0.8 at 0.2399: the bisection over [0, 1] in 12 halvings ends on the grid point
    # above it, 983 / 4096 = 0.23999 (on a grid of 1/2048 it would be 0.24023)
    p = trend_power(X, [9] * 4, 0.05, paper_slope=0.02)
    assert p["slope_for_power"] == 983 / 4096
    assert p["power_at_paper"] == pytest.approx(0.8 * 0.02 / 0.2399)
    # what it asks of the simulation: 2,000 ladders of 200 pivot draws, seed 0, the points at 10^x
    first = calls[0]
    assert (first["ladders"], first["draws"], first["seed"], first["alpha"]) == (2000, 200, 0, 0.05)
    assert first["compute"] == pytest.approx([10.0**v for v in X]) and first["sds"] == [0.05] * 4
    assert first["seeds"] == [9] * 4
    assert len(calls) == 1 + 1 + 12  # the paper's slope, the top of the bracket, 12 halvings


def test_exactly_80_percent_at_one_nat_is_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(power_mod, "simulate", fake(lambda s: 0.8 * s, []))
    assert trend_power(X, [9] * 4, 0.05)["slope_for_power"] == 1.0


def test_no_slope_up_to_one_nat_says_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(power_mod, "simulate", fake(lambda s: 0.1, []))
    p = trend_power(X, [9] * 4, 0.05, paper_slope=0.0)
    assert "slope_for_power" in p and p["slope_for_power"] is None
    assert "power_at_paper" not in p  # a paper slope of 0 is no slope to test


def test_fewer_than_three_points_simulate_nothing(calls: list[dict[str, Any]]) -> None:
    p = trend_power(X[:2], [9, 9], 0.05, paper_slope=0.02)
    assert p["why"] == "2 points: a trend test needs at least 3"
    assert calls == [] and "slope_for_power" not in p
    assert math.isfinite(trend_power(X[:3], [9] * 3, 0.05)["slope_for_power"])


def test_a_midpoint_with_exactly_80_percent_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    # a step: 0.8 from 0.5 on, 0.3 below; the first halving lands on 0.5 and keeps it
    monkeypatch.setattr(power_mod, "simulate", fake(lambda s: 0.8 if s >= 0.5 else 0.3, []))
    assert trend_power(X, [9] * 4, 0.05)["slope_for_power"] == 0.5
