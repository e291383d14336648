"""Every time the main job states is a range (issue 47): a rate recorded by earlier runs, the
fresh-seed stage of `verify` after its pilot and the live line's time left are widened for the
load there is now, as a priced rate's slow end is (`costs.estimate.load_drift`: 1 + load / cores).
The figures below are worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

import tlmsearch.costs.calibrate as cal
from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.costs.estimate import Estimate, Rate, estimate_text, load_drift, widened, widened_pace
from tlmsearch.costs.rates import rate_shape, record_rate
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.progress import Running, left_text, search_left, summary_line


def test_load_drift_is_one_plus_the_load_per_core() -> None:
    assert load_drift(2, 0.0) == 1.0  # a quiet machine: as measured
    assert load_drift(2, 4.4) == pytest.approx(3.2)  # 1 + 4.4 / 2
    assert load_drift(16, 8.0) == pytest.approx(1.5)
    assert load_drift(2, float("nan")) == 1.0 and load_drift(2, -1.0) == 1.0  # no load known
    assert load_drift(0, 3.0) == pytest.approx(4.0)  # at least one core


def test_a_measured_rate_keeps_its_spread_and_widens_its_slow_end() -> None:
    rate = Rate(0.1, 0.2, 1.0, 0.5, "measured in 3 earlier runs of this shape")
    wide = widened(rate, 2, 3.0)  # x(1 + 3/2) = x2.5 on the slowest run's rate
    assert (wide.s_per_step_low, wide.s_per_step_high) == pytest.approx((0.1, 0.5))
    assert (wide.overhead_s, wide.startup_s) == (1.0, 0.5)
    assert wide.source == "measured in 3 earlier runs of this shape, up to x2.5 slower beside a load of 3.0 on 2 cores"
    assert widened(rate, 2, 0.0) is rate  # nothing to widen on a quiet machine


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple:
    from tlmsearch.training.trainer import resolve_vocab

    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: pytest.fail("timed although rates were recorded"))
    model = preset("tiny").model_config("transformer")
    train = TrainConfig(steps=200, batch_size=4, eval_interval=50, eval_windows=8, threads=1, device="cpu")
    data = DataConfig(corpus="pydoc")
    shape = rate_shape(resolve_vocab(model, data).to_dict(), train.to_dict(), "cpu")
    for s_per_step in (0.25, 0.3, 0.2):  # three earlier runs of this shape
        record_rate(data.cache_path(), shape, s_per_step, 1.0, "test")
    return model, train, data


def test_a_recorded_rate_is_widened_for_the_load_now(recorded: tuple) -> None:
    """The recorded spread 0.2-0.3 s/step; beside a load of 2 on 2 cores the slow end is x2: 0.6."""
    model, train, data = recorded
    rate = cal.rate_or_reason(model, train, data, slots=2, cores=2, load=2.0)
    assert isinstance(rate, Rate)
    assert (rate.s_per_step_low, rate.s_per_step_high) == pytest.approx((0.2, 0.6))
    assert rate.source.endswith("up to x2 slower beside a load of 2.0 on 2 cores")
    quiet = cal.rate_or_reason(model, train, data, slots=2, cores=2, load=0.0)
    assert isinstance(quiet, Rate) and (quiet.s_per_step_low, quiet.s_per_step_high) == pytest.approx((0.2, 0.3))


def test_the_fresh_seed_stage_is_a_range_from_the_pilots_pace() -> None:
    """The pilot: 21 runs in 786 s = 37.43 s a run; 119 more: 4,454 s (1h14m) at that pace, and
    beside a load of 1 on 2 cores up to x1.5 slower: 6,681 s (1h51m)."""
    text = estimate_text(119, 21, 786.0, 0.0, drift=1.5, load_note="beside a load of 1.0 on 2 cores")
    assert text == (
        "1h14m-1h51m (37.4 s a run as the pilot ran: 21 runs in 13.1 min; up to x1.5 slower beside a load of "
        "1.0 on 2 cores)"
    )
    # quiet, no recorded rates: the pace alone, one figure
    assert estimate_text(12, 6, 60.0, 25.0) == "about 2m00s (10.0 s a run as the pilot ran: 6 runs in 60 s)"


def test_the_fresh_seed_range_is_never_narrower_than_the_recorded_rates() -> None:
    """Pace 10 s a run x 12 runs = 120 s, x2 = 240 s; the recorded rates say 100-300 s: 100-300 s."""
    priced = Estimate(100.0, 300.0, Rate(0.1, 0.3))
    assert widened_pace(12, 10.0, 2.0, priced) == pytest.approx((100.0, 300.0))
    assert widened_pace(12, 10.0, 2.0, Estimate(110.0, 200.0, Rate(0.1, 0.2))) == pytest.approx((110.0, 240.0))
    assert widened_pace(12, 10.0, 0.5) == pytest.approx((120.0, 120.0))  # never faster than measured
    text = estimate_text(12, 6, 60.0, 0.0, drift=2.0, priced=priced)
    assert text.startswith("1m40s-5m00s (10.0 s a run as the pilot ran: 6 runs in 60 s; up to x2 slower")
    assert text.endswith("; at the recorded step rates 1m40s-5m00s)")
    assert estimate_text(12, 0, 0.0, 0.0, priced=priced).startswith("1m40s-5m00s (no timing from the pilot")


def _ended(walls: list[float]) -> list[TrialRecord]:
    return [
        TrialRecord(trial_id=f"ab_{i:05d}", profile={"family": "knots"}, status="complete", wall_s=w,
                    metrics={"val_loss": 5.0}, full_fidelity=True)
        for i, w in enumerate(walls)
    ]  # fmt: skip


def test_the_live_lines_time_left_spans_the_ended_runs_and_the_load() -> None:
    """4 running (ETAs 30-33 s), 2 ended in 10 s and 20 s, 2 of 8 waiting: one round after the
    longest ETA: 33 + 10 = 43 s at the shortest run, (33 + 20) x 2 = 106 s at the longest, beside
    a load that doubles the slow end."""
    trials = [Running(f"ab_{i:05d} knots", 57, 120, 4096.0, 30.0 + i) for i in range(4)]
    records = _ended([10.0, 20.0])
    assert search_left(records, 8, trials, 4, drift=2.0) == pytest.approx((43.0, 106.0))
    assert search_left(records, 8, trials, 4) == pytest.approx((43.0, 53.0))
    assert left_text(43.0, 106.0) == "43s-1m46s" and left_text(43.0, 43.4) == "43s"
    line = summary_line("demo", records, 8, 4, 65.0, trials=trials, drift=2.0)
    assert line.endswith(" | 43s-1m46s left")
    narrow = summary_line("demo", records, 8, 4, 65.0, trials=trials, width=79, drift=2.0)
    assert narrow.split(" | ")[:4] == ["search demo", "2/8 ended", "best 5.0000", "43s-1m46s left"]


def test_between_two_trials_the_time_left_counts_every_place() -> None:
    """One trial has just ended and the next not yet started: 1 running of 2 places, ETA 30 s,
    4 waiting (2 ended of 7) in 2 rounds of 2, not 4 rounds of 1: 30 + 2 x 10 = 50 s to
    30 + 2 x 20 = 70 s (the measured run of 119 fresh seeds said 1h35m-10h55m left with 56 min
    left: the waiting runs counted in rounds of one)."""
    trials = [Running("ab_00002 knots", 60, 120, 4096.0, 30.0)]
    assert search_left(_ended([10.0, 20.0]), 7, trials, 1, places=2) == pytest.approx((50.0, 70.0))
    assert search_left(_ended([10.0, 20.0]), 7, trials, 1) == pytest.approx((70.0, 110.0))  # no places known
