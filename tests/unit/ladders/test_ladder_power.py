"""`ladder plan --paired-sd`: whether a ladder's trend test can show a trend, before it trains.
Checked against simulation with a known truth: at the slope it names for 80 % power, fresh
simulated ladders (another seed, more of them) show the trend about 80 % of the time; at a tenth
of it, seldom; power falls as the spread grows and rises with seeds."""

from __future__ import annotations

import math

import pytest

from tlmsearch.cli import main
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.power import TARGET_POWER, power_text, trend_power
from tlmsearch.ladders.simulate import simulate

X = [math.log10(c) for c in (2.05e11, 2.32e12, 1.01e13, 2.94e13)]  # the 8-layer ladder's FLOPs a run
POINTS = [
    "cpu-xs:d_model=16,n_heads=1,base_width=48,n_layers=8@20",
    "cpu-xs:d_model=32,n_heads=2,base_width=96,n_layers=8@20",
    "cpu-xs:n_layers=8@20",
]


def test_the_slope_it_names_is_shown_four_times_in_five_by_fresh_ladders() -> None:
    p = trend_power(X, [9] * 4, 0.03, ladders=1000)
    slope = p["slope_for_power"]
    assert 0.01 < slope < 0.2
    fresh = simulate([10**v for v in X], [0.03] * 4, seeds=9, slope=slope, ladders=4000, seed=11).trend_rate
    assert abs(fresh - TARGET_POWER) < 0.06, fresh
    small = simulate([10**v for v in X], [0.03] * 4, seeds=9, slope=slope / 10, ladders=2000, seed=12).trend_rate
    assert small < 0.1


def test_power_falls_with_the_spread_and_rises_with_seeds() -> None:
    slope = 0.02
    wide = trend_power(X, [9] * 4, 0.06, paper_slope=slope, ladders=500)
    narrow = trend_power(X, [9] * 4, 0.01, paper_slope=slope, ladders=500)
    more = trend_power(X, [40] * 4, 0.06, paper_slope=slope, ladders=500)
    assert wide["power_at_paper"] < 0.1 < narrow["power_at_paper"]
    assert wide["power_at_paper"] <= more["power_at_paper"]
    assert narrow["slope_for_power"] < wide["slope_for_power"]
    assert trend_power(X, [9] * 4, 0.06, paper_slope=slope, ladders=500) == wide  # deterministic


def test_its_words() -> None:
    p = {"points": 4, "seeds": [9, 9, 5, 5], "paired_sd": 0.06, "ladders": 2000, "paper_slope": 0.0186,
         "power_at_paper": 0.02, "slope_for_power": 0.0552}  # fmt: skip
    text = power_text(p, "compute")
    assert "(4 points, 9/9/5/5 deciding seeds a point, paired sd 0.06 nats" in text
    assert "2% at the paper's slope (+0.0186 nats a decade of compute" in text
    assert text.endswith("80% power from 0.0552 nats a decade of compute (5.7% in perplexity, 3.0x the paper's)")
    depth = power_text({**p, "slope_for_power": None}, "depth")
    assert depth.endswith("no slope up to 1 nat a doubling of depth is shown 80% of the time")
    few = {
        "points": 2,
        "seeds": [9, 9],
        "paired_sd": 0.1,
        "ladders": 10,
        "why": "2 points: a trend test needs at least 3",
    }
    assert power_text(few, "compute").endswith("): 2 points: a trend test needs at least 3")


@pytest.mark.parametrize("bad", [0.0, -0.05, math.nan, math.inf])
def test_a_paired_sd_that_is_not_one_is_refused(bad: float, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match="paired_sd"):
        trend_power(X, [9] * 4, bad)
    assert main(["ladder", "plan", "--points", *POINTS, "--paired-sd", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "paired_sd" in err


def test_the_plan_says_it_or_says_how(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ladder", "plan", "--points", *POINTS, "--seeds", "6"]) == 0
    assert (
        capsys.readouterr()
        .out.rstrip()
        .endswith("add --paired-sd SD (nats; a pilot's spread) to see whether its trend test can show a trend")
    )
    assert main(["ladder", "plan", "--points", *POINTS, "--seeds", "6", "--paired-sd", "0.2"]) == 0
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert last.startswith("trend test's power (3 points, 6/6/6 deciding seeds a point, paired sd 0.2 nats")
    assert "at the paper's slope" in last
