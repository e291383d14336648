"""Pins of turning records into the analysis's inputs (`analysis/collect.py`), worked out by
hand: an old record's label of an unknown family, long numbers cut for display, the paper's
cosine recognised by its defaults, names kept only for a merged candidate, and the seed noise
floor pooled over profiles."""

from __future__ import annotations

import math

import pytest
from analysis_fakes import record

from tlmsearch.analysis.collect import brief_text, profile_baseline, profile_label, profile_results, seed_noise_floor
from tlmsearch.rundir.records import TrialRecord

COSINE = "cosine:start=1.5,end=0.5"


def test_an_unknown_family_is_still_labelled_with_its_parameters() -> None:
    assert profile_label({"family": "oldfam", "params": {"a": 1.5, "b": 2}}) == "oldfam:a=1.5,b=2"
    assert profile_label({"family": "oldfam", "params": {}}) == "oldfam"


def test_long_numbers_are_cut_for_display_only() -> None:
    assert brief_text("knots:k0=1.9130240708769255,k1=1") == "knots:k0=1.91,k1=1"
    assert brief_text("cosine:start=1.5,end=0.5") == "cosine:start=1.5,end=0.5"


@pytest.mark.parametrize(
    ("profile", "baseline"),
    [
        ({"family": "cosine", "params": {}}, "cosine"),  # the defaults are 1.5 -> 0.5
        ({"family": "cosine", "params": {"start": 1.5}}, "cosine"),
        ({"family": "cosine", "params": {"end": 0.5}}, "cosine"),
        ({"family": "cosine", "params": {"start": 1.2, "end": 0.5}}, None),
        ({"family": "cosine", "params": {"start": 1.5, "end": 0.8}}, None),
        ({"family": "uniform"}, "uniform"),
        ({"family": "linear", "params": {"start": 1.5, "end": 0.5}}, None),
    ],
)
def test_the_papers_cosine_is_recognised_by_its_numbers(profile: dict, baseline: str | None) -> None:
    assert profile_baseline(profile) == baseline


def _recs(rows: list[tuple[str, str, float, int, int]]) -> list[TrialRecord]:
    return [TrialRecord.from_dict(record(t, p, loss, kind="verify", seed=s, max_steps=n)) for t, p, loss, s, n in rows]


def test_a_candidate_of_one_name_carries_no_names() -> None:
    (only,) = profile_results(_recs([("a", COSINE, 2.0, 0, 40), ("b", COSINE, 2.1, 1, 40)]))
    assert only.names == () and only.loss == {0: 2.0, 1: 2.1}


def test_the_seed_noise_floor_pools_profiles_by_hand() -> None:
    rows = [("u0", "uniform", 1.0, 0, 40), ("u1", "uniform", 1.2, 1, 40)]
    rows += [("c0", COSINE, 2.0, 0, 40), ("c1", COSINE, 2.2, 1, 40), ("c2", COSINE, 2.4, 2, 40)]
    rows += [("x", "knots:k0=3,k1=1", 9.0, 0, 40)]  # one seed: no spread, left out
    rows += [("o0", "uniform", 5.0, 0, 20), ("o1", "uniform", 7.0, 1, 20)]  # another length: left out
    # variances 0.02 (1 df) and 0.04 (2 df): pooled 0.1 / 3; over the mean of the five losses, 8.8 / 5
    floor, groups = seed_noise_floor(_recs(rows), 40)
    assert groups == 2
    assert floor == pytest.approx(math.sqrt(0.1 / 3) / 1.76, rel=1e-9)
    assert seed_noise_floor(_recs(rows), 20) == pytest.approx((math.sqrt(2.0) / 6.0, 1), rel=1e-9)
    assert seed_noise_floor(_recs(rows[:1] + rows[5:6]), 40) is None  # no profile with two seeds
