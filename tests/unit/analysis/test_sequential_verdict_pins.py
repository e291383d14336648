"""Pins of the group-sequential verdict (`analysis/sequential_verdict.py`) worked out by hand:
its levels (1 - 2 alpha / m for each candidate's repeated interval, 1 - 2 alpha for cosine's
regret), the runs it counts, the look it names, which candidates it calls undecided, that it
stops at the last look, that settling is the default, and that it replaces only the comparisons
against its own reference."""

from __future__ import annotations

import math

import pytest
from analysis_fakes import verify_trials as recs

from tlmsearch.analysis.sequential import Design
from tlmsearch.analysis.sequential_verdict import _expm1, decide_groups, sequential_verdicts
from tlmsearch.analysis.verdicts import verdicts

COSINE = "cosine:start=1.5,end=0.5"
WINNER = "knots:k0=3,k1=1"


@pytest.fixture(scope="module")
def clear_winner() -> tuple:
    # 4 candidates against cosine, 3 looks of 4, 8, 12 seeds; knots:k0=3,k1=1 is 0.10 nats better
    records = recs(seeds=12)
    ((v, g),) = sequential_verdicts(records, Design(looks=(4, 8, 12)), list(range(12)), through=1)
    return records, v, g


def test_a_clear_winner_at_the_first_look_by_hand(clear_winner: tuple) -> None:
    _, v, g = clear_winner
    assert v.outcome == "better" and v.better == WINNER
    # m = 4 candidates, alpha 0.05: 1 - 2 x 0.05 / 4 = 97.5 %; cosine's regret at 1 - 2 x 0.05 = 90 %
    assert v.confidence == pytest.approx(0.975, abs=1e-12)
    assert v.regret.confidence == pytest.approx(0.9, abs=1e-12)
    assert "(97.5% repeated-confidence interval" in v.headline and "shown at look 1;" in v.headline
    # it settles: every profile stops at 4 seeds, 5 x 4 = 20 runs of the 5 x 12 = 60 all looks would take
    assert "1 of 3 looks (4 of 12 seeds per profile)" in v.headline
    assert "20 runs of the 60 all looks would take" in v.headline
    summary = g.to_dict()
    assert (summary["runs"], summary["runs_all_looks"]) == (20, 60)
    assert summary["decided_look"][WINNER] == 1 and g.active == () and not g.running


def test_the_table_carries_each_candidates_repeated_interval(clear_winner: tuple) -> None:
    _, v, g = clear_winner
    rows = {r["label"]: r for r in v.table}
    assert rows[COSINE].get("gain_vs_cosine") is None
    for label in g.candidates:
        gain = rows[label]["gain_vs_cosine"]
        assert gain["confidence"] == pytest.approx(0.975, abs=1e-12) and gain["n"] == 4
        assert rows[label]["p_better"] is None and rows[label]["p_within"] is None
    j = g.candidates.index(WINNER)
    assert rows[WINNER]["gain_vs_cosine"]["low"] == pytest.approx(math.expm1(float(g.decision.low[j])))


def test_only_comparisons_against_its_reference_are_replaced(clear_winner: tuple) -> None:
    records, v, _ = clear_winner
    (fixed,) = verdicts(records, margin=0.01, alpha=0.05, seeds=list(range(4)))
    others = {(c.label, c.reference): c for c in fixed.comparisons if c.reference != COSINE}
    assert others  # the fixed verdict also compares against uniform
    for c in v.comparisons:
        if c.reference != COSINE:
            assert c.gain == others[(c.label, c.reference)].gain
        else:
            assert c.gain.confidence == pytest.approx(0.975, abs=1e-12)


def test_settling_is_the_default() -> None:
    records, design = recs(seeds=12), Design(looks=(4, 8, 12))
    ((_, g),) = sequential_verdicts(records, design, list(range(12)), through=1)
    (unsettled,) = decide_groups(records, design, list(range(12)), through=1, settle=False)
    assert g.active == ()
    assert unsettled.active == ("knots:k0=1,k1=1.2", "linear:start=1.2,end=0.8", "uniform") and unsettled.running


def test_undecided_candidates_are_named_and_stop_at_the_last_look() -> None:
    records, design = recs(seeds=3, winner_gain=0.0, noise=0.05), Design(looks=(2, 3))
    ((v, g),) = sequential_verdicts(records, design, list(range(3)), through=2)
    assert v.outcome == "inconclusive" and g.active == ("knots:k0=1,k1=1.2", WINNER)
    assert not g.running  # undecided, but the last look is taken
    assert v.headline.split(" undecided: ")[1].startswith("knots:k0=1,k1=1.2, knots:k0=3,k1=1;")
    ((_, first),) = sequential_verdicts(records, design, list(range(3)), through=1)
    assert first.running


def test_an_unbounded_end_stays_unbounded() -> None:
    assert _expm1(-math.inf) == -math.inf and _expm1(math.inf) == math.inf
    assert math.isnan(_expm1(math.nan))
    assert _expm1(0.1) == pytest.approx(math.expm1(0.1), rel=1e-15)


def test_the_headline_counts_its_candidates_in_words(clear_winner: tuple) -> None:
    records, v, _ = clear_winner
    assert "Holm over 4 candidates at each look" in v.headline
    pair = [r for r in records if r.trial_id.startswith((f"v-{COSINE}-", f"v-{WINNER}-"))]
    ((one, _),) = sequential_verdicts(pair, Design(looks=(4, 8, 12)), list(range(12)), through=1)
    assert "Holm over 1 candidate at each look" in one.headline
