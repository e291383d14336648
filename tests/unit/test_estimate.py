"""The estimate arithmetic (`tlmsearch.costs.estimate`): injected rates, no clock, no files."""

from __future__ import annotations

import pytest

from tlmsearch.costs.estimate import (
    Estimate,
    Rate,
    Work,
    duration,
    estimate,
    eval_share,
    fixed_work,
    makespan,
    plan_line,
    search_work,
)


def test_duration() -> None:
    assert [duration(s) for s in (0, 47.4, 60, 185, 3600, 8040)] == ["0s", "47s", "1m00s", "3m05s", "1h00m", "2h14m"]


def test_makespan_fills_free_places_in_order() -> None:
    assert makespan([], 2) == 0.0
    assert makespan([10, 10, 10], 2) == 20  # two at once, the third after the first
    assert makespan([10, 10, 10], 3) == 10
    assert makespan([30, 10, 10, 10], 2) == 30  # the short ones pass the long one
    assert makespan([10, 10], 1) == 20
    assert makespan([10, 10, 10], 2, startup_s=5) == 25  # each place starts its worker once


def test_search_work_baselines_run_in_full_others_may_stop() -> None:
    w = search_work(6, 300, baselines=4, first_rung=100, slots=2)
    assert w.runs == ((300, 300),) * 4 + ((100, 300),) * 2 and w.steps == (1400, 1800)
    assert search_work(6, 300, baselines=4, first_rung=None, slots=2).steps == (1800, 1800)  # no early stopping
    assert search_work(6, 300, baselines=4, first_rung=100, slots=2, done=5).runs == ((100, 300),)  # a resume
    assert search_work(3, 50, baselines=4, first_rung=100, slots=1).runs == ((50, 50),) * 3


def test_estimate_is_a_range_over_rate_and_early_stopping() -> None:
    rate = Rate(0.1, 0.2, overhead_s=1.0, startup_s=5.0, source="injected")
    e = estimate(search_work(4, 100, baselines=2, first_rung=20, slots=2), rate)
    # fewest: runs of 11, 11, 3, 3 s on 2 places after 5 s of start-up: 5 + 11 + 3 = 19
    # most: every run 100 steps at 0.2 s + 1 s = 21 s, two waves: 5 + 42 = 47
    assert e.low_s == pytest.approx(19.0) and e.high_s == pytest.approx(47.0)
    assert e.text() == "19s-47s"
    point = estimate(fixed_work(2, 100, 2), Rate(0.1, 0.1))
    assert point.text() == "about 10s"


def test_rate_measured_and_checked() -> None:
    r = Rate.measured([0.3, 0.1, 0.2], [1.0, 25.0, 2.0], source="three runs")
    assert (r.s_per_step_low, r.s_per_step_high, r.overhead_s, r.startup_s) == (0.1, 0.3, 2.0, 23.0)
    assert r.text(1000) == "0.1-0.3 s/step, 3,333-10,000 tok/s: three runs"
    assert Rate(0.5, 0.5).text(1000) == "0.5 s/step, 2,000 tok/s"
    with pytest.raises(ValueError):
        Rate(0.2, 0.1)
    with pytest.raises(ValueError):
        Rate(0.0, 0.1)
    with pytest.raises(ValueError):
        Rate.measured([])
    with pytest.raises(ValueError):
        Work(((5, 3),))


def test_plan_line_with_and_without_an_estimate() -> None:
    e = Estimate(70, 125, Rate(0.03, 0.035, source="timed now on 6 steps"))
    assert plan_line("search x: 8 trials", e, 2048) == (
        "search x: 8 trials; estimate 1m10s-2m05s (0.03-0.035 s/step, 58,514-68,267 tok/s: timed now on 6 steps)"
    )
    assert plan_line("search x", "too big to time") == "search x; no estimate (too big to time)"


def test_eval_share() -> None:
    # 300 steps, an evaluation every 50 (6), 32 windows in batches of 16 (2 forward passes at 1/3)
    assert eval_share(50, 32, 16, 300) == pytest.approx(6 * 2 / 3 / 300)
    assert eval_share(50, 32, 16, 0) == 0.0
    assert eval_share(40, 16, 16, 120) == pytest.approx(3 / 3 / 120)
