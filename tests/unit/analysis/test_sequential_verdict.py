"""The verdict of a group-sequential verify from its records: the outcome, the candidates still
training after a look, the headline that says it was sequential, and the report's re-decision."""

from __future__ import annotations

import pytest
from analysis_fakes import verify_trials as recs

from tlmsearch.analysis.sequential import Design
from tlmsearch.analysis.sequential_verdict import decide_groups, from_plan, sequential_verdicts
from tlmsearch.analysis.summary import run_verdicts

COSINE = "cosine:start=1.5,end=0.5"


@pytest.mark.slow
def test_a_clear_winner_is_better_at_the_first_look_and_the_study_stops() -> None:
    design = Design(looks=(4, 8, 12))
    records = recs(seeds=12)
    ((v, g),) = sequential_verdicts(records, design, list(range(12)), through=1)
    assert v.outcome == "better" and v.better == "knots:k0=3,k1=1"
    assert "group-sequential: 1 of 3 looks" in v.headline and "shown at look 1" in v.headline
    assert not g.running and g.active == ()
    assert g.seeds_used()[COSINE] == 4
    summary = g.to_dict()
    assert summary["runs"] == 4 * 5 and summary["runs_all_looks"] == 12 * 5


def test_near_optimal_when_every_candidate_is_within_the_margin() -> None:
    design = Design(looks=(4, 8, 12))
    records = recs(seeds=12, winner_gain=0.0)  # the best candidate equals cosine
    ((v, g),) = sequential_verdicts(records, design, list(range(12)), through=3)
    assert v.outcome == "near_optimal", v.headline
    assert v.within_margin and "cosine is near-optimal" in v.headline and "group-sequential" in v.headline
    for c in v.comparisons:
        if c.reference == COSINE:
            assert c.within_margin and c.p_better is None  # the sequential tests give no fixed p-value
    assert not g.running


@pytest.mark.slow
def test_undecided_candidates_keep_training() -> None:
    design = Design(looks=(2, 4, 6, 8, 10, 12), spending="obf")
    records = recs(seeds=12, winner_gain=0.0, noise=0.02)  # noisy: nothing decided at 2 seeds
    (g,) = decide_groups(records, design, list(range(12)), through=1)
    assert g.running and COSINE not in g.active and len(g.active) == 4


def test_report_redecides_from_verify_json() -> None:
    design = Design(looks=(4, 8, 12))
    records = recs(seeds=12)
    plan = {
        "steps": 40,
        "pilot_seeds": [],
        "decision_seeds": list(range(4)),
        "complete": True,
        "sequential": {"design": design.to_dict(), "seeds": list(range(12)), "looks_taken": 1},
    }
    (v,) = run_verdicts(records, plan)
    assert v.outcome == "better" and "group-sequential" in v.headline
    (w,) = from_plan(records, plan["sequential"])  # type: ignore[arg-type]
    assert w.headline == v.headline
