"""Pins for `analysis.pairing` that its mutation run asked for: two seeds are enough, the record
of a pairing is its figures, a budget without cosine gives nothing, and both results are frozen."""

from __future__ import annotations

import dataclasses
import math

import pytest
from analysis_fakes import record

from tlmsearch.analysis.pairing import Comparison, Pairing, pairing, record_pairings

COSINE = "cosine:start=1.5,end=0.5"


def test_two_seeds_are_enough_and_one_is_refused() -> None:
    # a = 1, 3 and b = 2, 2: sd_a sqrt(2), sd_b 0; differences -1, +1: sd sqrt(2)
    p = pairing([1.0, 3.0], [2.0, 2.0])
    assert p.n == 2
    assert (p.sd_a, p.sd_b, p.paired_sd) == (math.sqrt(2.0), 0.0, math.sqrt(2.0))
    assert math.isnan(p.correlation)  # one profile does not spread: no correlation
    with pytest.raises(ValueError, match=r"got 1 and 1"):
        pairing([1.0], [1.0])
    with pytest.raises(ValueError, match=r"got 3 and 2"):
        pairing([1.0, 2.0, 3.0], [1.0, 2.0])


def test_no_spread_gives_no_ratio() -> None:
    assert math.isnan(Pairing(4, 0.0, 0.0, 0.0).ratio)
    assert math.isnan(Pairing(4, 0.0, 0.0, 0.0).correlation)


def test_to_dict_holds_every_figure() -> None:
    # sd_a 0.3, sd_b 0.4: unpaired 0.5; paired 0.1: r = (0.09 + 0.16 - 0.01) / 0.24 = 1, ratio 0.2
    d = Pairing(5, 0.3, 0.4, 0.1).to_dict()
    assert set(d) == {"n", "sd_a", "sd_b", "paired_sd", "unpaired_sd", "correlation", "ratio"}
    assert (d["n"], d["sd_a"], d["sd_b"], d["paired_sd"]) == (5, 0.3, 0.4, 0.1)
    assert d["unpaired_sd"] == pytest.approx(0.5, abs=1e-15)
    assert d["correlation"] == pytest.approx(1.0, abs=1e-12)
    assert d["ratio"] == pytest.approx(0.2, abs=1e-15)


def test_results_are_frozen() -> None:
    p = Pairing(3, 1.0, 1.0, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.n = 4  # type: ignore[misc]
    c = Comparison((8, 32), "uniform", p)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.candidate = "bowtie"  # type: ignore[misc]


def test_a_budget_without_cosine_gives_nothing() -> None:
    recs = [record(f"u{s}", "uniform", 2.0 + s / 10, kind="verify", seed=s) for s in range(3)]
    recs += [record(f"b{s}", "bowtie", 2.1 + s / 20, kind="verify", seed=s) for s in range(3)]
    assert record_pairings(recs) == []


def test_two_common_seeds_make_a_comparison() -> None:
    # cosine on seeds 0, 1, 2; uniform on 1 and 2 only: two seeds in common are enough
    recs = [record(f"c{s}", COSINE, v, kind="verify", seed=s) for s, v in enumerate([2.0, 2.1, 2.3])]
    recs += [record(f"u{s}", "uniform", v, kind="verify", seed=s) for s, v in [(1, 2.2), (2, 2.3)]]
    (c,) = record_pairings(recs)
    assert c.pairing.n == 2
    # log perplexity is the loss: differences 2.1 - 2.2 and 2.3 - 2.3, sd 0.1 / sqrt(2)
    assert c.pairing.paired_sd == pytest.approx(0.1 / math.sqrt(2.0), abs=1e-12)
