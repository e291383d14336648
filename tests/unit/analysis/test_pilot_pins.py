"""Pins for `analysis.pilot` that its mutation run asked for: which records are the pilot's, the
fewest pairs behind the spread, the first of tied candidates named, a pilot too thin to plan
from refused by name, and the bootstrap's floor of fresh seeds."""

from __future__ import annotations

import dataclasses
import math
import statistics

import pytest
from analysis_fakes import record

from tlmsearch.analysis.pilot import PilotSpread, decision_seeds, pilot_spread, plan_from_pilot
from tlmsearch.core.validate import MIN_BOOTSTRAP_SEEDS
from tlmsearch.errors import ConfigError

COSINE = "cosine:start=1.5,end=0.5"
COS = [2.0, 2.1, 2.3, 2.2, 2.4, 2.0]  # six seeds of cosine's losses (log perplexities)
UNI = [2.05, 2.2, 2.3, 2.0, 2.9, 1.5]  # the last three seeds spread far more than the first three


def _runs(spec: str, losses: list[float], seeds: range | list[int]) -> list[dict]:
    return [record(f"{spec}-{s}", spec, losses[s], kind="verify", seed=s) for s in seeds]


def test_only_the_pilot_seeds_are_read() -> None:
    recs = _runs(COSINE, COS, range(6)) + _runs("uniform", UNI, range(6))
    spread = pilot_spread(recs, [0, 1, 2])
    first3 = statistics.stdev([c - u for c, u in zip(COS[:3], UNI[:3], strict=True)])
    assert spread.sd == pytest.approx(first3, abs=1e-12) and spread.n_pairs == 3
    assert pilot_spread(recs, range(6)).n_pairs == 6


def test_the_fewest_pairs_and_the_largest_spread_are_reported() -> None:
    # uniform paired on seeds 0-2; the bowtie finished seeds 0 and 1 only
    recs = _runs(COSINE, COS, range(3)) + _runs("uniform", UNI, range(3)) + _runs("bowtie", UNI, [0, 1])
    spread = pilot_spread(recs, [0, 1, 2])
    assert spread.n_pairs == 2 and spread.n_candidates == 2
    # uniform's differences -0.05, -0.1, 0 (sd 0.05) spread more than the bowtie's -0.05, -0.1
    assert spread.worst == "uniform"
    assert spread.sd == pytest.approx(0.05, abs=1e-12)
    assert spread.unpaired_sd == pytest.approx(math.hypot(statistics.stdev(COS[:3]), statistics.stdev(UNI[:3])))


def test_of_tied_candidates_the_first_is_named() -> None:
    # the bowtie's losses are uniform's: the same differences, exactly the same sd
    recs = _runs(COSINE, COS, range(3)) + _runs("uniform", UNI, range(3)) + _runs("bowtie", UNI, range(3))
    assert pilot_spread(recs, [0, 1, 2]).worst == "uniform"


def test_no_spread_still_names_its_candidate() -> None:
    recs = _runs(COSINE, COS, range(3)) + _runs("uniform", COS, range(3))  # identical runs: sd 0
    spread = pilot_spread(recs, [0, 1, 2])
    assert (spread.sd, spread.worst, spread.n_pairs) == (0.0, "uniform", 3)


def test_a_pilot_of_two_pairs_plans() -> None:
    recs = _runs(COSINE, COS, [0, 1]) + _runs("uniform", UNI, [0, 1])
    assert pilot_spread(recs, [0, 1]).n_pairs == 2


def test_a_pilot_of_one_pair_is_refused_by_name() -> None:
    recs = _runs(COSINE, COS, [0]) + _runs("uniform", UNI, [0])
    with pytest.raises(ConfigError, match=r"the pilot finished only 1 paired seed\(s\) of uniform and cosine"):
        pilot_spread(recs, [0])


def test_a_pilot_without_the_reference_is_refused() -> None:
    recs = _runs("uniform", UNI, range(3)) + _runs("bowtie", COS, range(3))
    with pytest.raises(ConfigError, match=r"the pilot has no finished cosine .*and candidate pair"):
        pilot_spread(recs, [0, 1, 2])


def test_the_bootstrap_plans_at_least_its_minimum_of_fresh_seeds() -> None:
    recs = _runs(COSINE, COS, range(3)) + _runs("uniform", [c + 0.001 * (s % 2) for s, c in enumerate(COS)], range(3))
    t_plan, _ = plan_from_pilot(recs, [0, 1, 2], margin=0.05, alpha=0.05, max_seeds=40)
    boot, _ = plan_from_pilot(recs, [0, 1, 2], margin=0.05, alpha=0.05, max_seeds=40, method="bootstrap")
    assert t_plan.final_seeds < MIN_BOOTSTRAP_SEEDS <= boot.final_seeds  # a tiny spread: few t seeds
    assert boot.final_seeds == MIN_BOOTSTRAP_SEEDS
    assert decision_seeds(boot, [0, 1, 2]) == list(range(3, 3 + MIN_BOOTSTRAP_SEEDS))


def test_the_spread_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        PilotSpread(0.1, 1, 3, "uniform").sd = 0.2  # type: ignore[misc]
