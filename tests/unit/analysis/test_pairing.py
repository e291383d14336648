"""Paired against unpaired spreads (`analysis.pairing`) on hand-worked values and on records."""

from __future__ import annotations

import math
import statistics

import pytest
from analysis_fakes import record

from tlmsearch.analysis.pairing import Pairing, pairing, record_pairings
from tlmsearch.errors import ConfigError


def test_hand_worked_pairing() -> None:
    # a = 1, 2, 3 and b = 1, 3, 2: sd 1 each; differences 0, -1, 1: sd 1; r = (1 + 1 - 1) / 2 = 0.5
    p = pairing([1.0, 2.0, 3.0], [1.0, 3.0, 2.0])
    assert (p.sd_a, p.sd_b, p.paired_sd) == (1.0, 1.0, 1.0)
    assert p.unpaired_sd == pytest.approx(math.sqrt(2.0), abs=1e-12)
    assert p.correlation == pytest.approx(0.5, abs=1e-12)
    assert p.ratio == pytest.approx(1 / math.sqrt(2.0), abs=1e-12)  # sqrt(1 - r) at equal spreads
    assert p.correlation == pytest.approx(statistics.correlation([1, 2, 3], [1, 3, 2]), abs=1e-12)


def test_independent_and_identical_runs() -> None:
    same = pairing([0.1, 0.3, 0.2, 0.5], [0.1, 0.3, 0.2, 0.5])
    assert same.paired_sd == 0.0 and same.correlation == pytest.approx(1.0) and same.ratio == 0.0
    assert math.isnan(Pairing(3, 0.0, 0.0, 0.0).correlation)
    with pytest.raises(ValueError, match="at least 2 seeds"):
        pairing([1.0], [2.0])


def test_record_pairings_compares_cosine_with_each_candidate_on_log_perplexity() -> None:
    cos, uni = [2.0, 2.1, 2.3], [2.05, 2.2, 2.3]
    recs = [record(f"c{s}", "cosine:start=1.5,end=0.5", v, kind="verify", seed=s) for s, v in enumerate(cos)]
    recs += [record(f"u{s}", "uniform", v, kind="verify", seed=s) for s, v in enumerate(uni)]
    (c,) = record_pairings(recs)
    assert c.candidate == "uniform" and c.pairing.n == 3
    assert c.pairing.paired_sd == pytest.approx(statistics.stdev([a - b for a, b in zip(cos, uni, strict=True)]))
    assert c.pairing.correlation == pytest.approx(statistics.correlation(cos, uni))
    assert record_pairings(recs, seeds=[0]) == []  # one seed: no spread


def test_the_pilot_plans_from_the_paired_sd_and_states_the_pairing() -> None:
    from tlmsearch.analysis.pilot import pilot_spread, plan_from_pilot

    cos, uni = [2.0, 2.1, 2.3], [2.05, 2.2, 2.3]
    recs = [record(f"c{s}", "cosine:start=1.5,end=0.5", v, kind="verify", seed=s) for s, v in enumerate(cos)]
    recs += [record(f"u{s}", "uniform", v, kind="verify", seed=s) for s, v in enumerate(uni)]
    spread = pilot_spread(recs, [0, 1, 2])
    assert spread.sd == pytest.approx(statistics.stdev([a - b for a, b in zip(cos, uni, strict=True)]))
    assert spread.correlation == pytest.approx(statistics.correlation(cos, uni))
    assert spread.unpaired_sd == pytest.approx(math.sqrt(statistics.variance(cos) + statistics.variance(uni)))
    plan, _ = plan_from_pilot(recs, [0, 1, 2], margin=0.05, alpha=0.05, max_seeds=40)
    assert plan.sd == spread.sd  # planned from the paired sd, not from independent runs
    assert plan.unpaired_needed is not None and plan.unpaired_needed > plan.needed  # what pairing saved
    assert "planned from the pairing the pilot measured: seed correlation +0.95" in plan.describe()


def test_the_pilot_plans_from_the_spreads_against_a_chosen_reference() -> None:
    """With `verify --reference X` the verdict compares every candidate with X, so the pilot plans
    from the paired spreads against X, not against cosine. Hand-worked: seed offsets 0, +0.1, -0.1
    shared by every profile; uniform's own noise 0, 0, +0.03 and the reference's +0.03, -0.03, 0.
    Against cosine: uniform's differences 0.05, 0.05, 0.08 (sd 0.0173), the reference's 0.09,
    0.03, 0.06 (sd 0.03, the largest). Against the reference: cosine's -0.09, -0.03, -0.06 (sd
    0.03), uniform's -0.04, +0.02, +0.02 (sd 0.0346, the largest)."""
    from tlmsearch.analysis.pilot import pilot_spread, plan_from_pilot

    ref = "knots:k0=1,k1=1.2"
    offset, own = [0.0, 0.1, -0.1], {"uniform": [0.0, 0.0, 0.03], ref: [0.03, -0.03, 0.0]}
    base = {"cosine:start=1.5,end=0.5": 2.25, "uniform": 2.30, ref: 2.31}
    recs = [
        record(f"{spec}-{s}", spec, loss + offset[s] + own.get(spec, [0.0] * 3)[s], kind="verify", seed=s)
        for spec, loss in base.items()
        for s in range(3)
    ]
    # the values are log perplexities (record: ppl = exp(loss)): the differences above exactly
    by_cosine = pilot_spread(recs, [0, 1, 2])
    assert by_cosine.worst == ref and by_cosine.sd == pytest.approx(0.03, abs=1e-9)
    by_ref = pilot_spread(recs, [0, 1, 2], reference=ref)
    assert by_ref.worst == "uniform" and by_ref.sd == pytest.approx(statistics.stdev([-0.04, 0.02, 0.02]), abs=1e-9)
    assert by_ref.n_candidates == 2  # cosine and uniform against the reference
    assert pilot_spread(recs, [0, 1, 2], reference="cosine") == by_cosine  # the default by name
    plan, spread = plan_from_pilot(recs, [0, 1, 2], margin=0.05, alpha=0.05, max_seeds=40, reference=ref)
    assert spread == by_ref and plan.sd == by_ref.sd
    with pytest.raises(ConfigError, match="no finished linear:start=1.2,end=0.8 and candidate pair"):
        pilot_spread(recs, [0, 1, 2], reference="linear:start=1.2,end=0.8")  # a reference the pilot lacks
