"""The verdicts of a run at the levels its verification recorded (`summary.recorded_verdicts`),
which `status`, `export` and `ladder --best-from` read: verify.json's margin and alpha, never the
defaults (margin 0.01, alpha 0.05) when it records others."""

from __future__ import annotations

import pytest
from analysis_fakes import verify_records

from tlmsearch.analysis.summary import recorded_verdicts
from tlmsearch.errors import ConfigError

# the winner is 0.015 nats better than cosine over 8 seeds: its lower bound (~0.013) clears the
# default margin (log 1.01 = 0.00995) and not a margin of 2% (log 1.02 = 0.0198)
RECORDS = verify_records(seeds=8, winner_gain=0.015)


def test_a_run_verified_at_margin_2_percent_reads_back_at_2_percent() -> None:
    (v,) = recorded_verdicts(RECORDS, {"margin": 0.02, "alpha": 0.1}, arch="transformer")
    assert (v.margin, v.alpha) == (0.02, 0.1)
    assert v.confidence == pytest.approx(1 - 2 * 0.1 / 4)  # 4 candidates against cosine: 0.95
    assert v.outcome == "better" and v.better == "knots:k0=3,k1=1"
    assert v.better_clears_margin is False


def test_a_plan_without_levels_reads_at_the_defaults() -> None:
    for plan in ({}, None):
        (v,) = recorded_verdicts(RECORDS, plan, arch="transformer")
        assert (v.margin, v.alpha) == (0.01, 0.05)
        assert v.confidence == pytest.approx(1 - 2 * 0.05 / 4)  # 0.975
        assert v.better_clears_margin is True


def test_a_damaged_level_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="margin=0.5%"):
        recorded_verdicts(RECORDS, {"margin": "0.5%"})
