"""The study's cost estimate: trial counts per phase, hours from a price or from measured
trials, the time left, and the price itself (no training: FLOPs or recorded rates)."""

from __future__ import annotations

from pathlib import Path

import pytest
from study_fakes import tiny_study

from tlmsearch.core.base import DataConfig
from tlmsearch.studies.cost import (
    calibrate,
    estimate,
    phase_trials,
    read_calibration,
    remaining_seconds,
    steps_equivalent,
    trials_per_arch,
)

tiny = tiny_study  # the shared tiny two-architecture study (tests/helpers/study_fakes.py)


def test_phase_counts_add_up_to_the_trials_of_an_architecture(tmp_path: Path) -> None:
    cfg = tiny(tmp_path)
    # 4 search trials and the noise floor's 2 extra uniform seeds (3 by default, one is the baseline)
    assert phase_trials(cfg) == {"search": (6, 6), "verify": (8, 8), "transfer": (0, 4)}
    assert trials_per_arch(cfg) == (14, 18)
    assert phase_trials(cfg.with_fields(noise_seeds=0))["search"] == (4, 4)
    planned = phase_trials(cfg.replace(seeds=0))["verify"]  # pilot + 2 .. the cap, 4 profiles
    assert planned == (4 * 5, 4 * 5)
    assert phase_trials(cfg.replace(seeds=0, max_seeds=12))["verify"] == (20, 48)
    # the learning-rate check: cosine and the candidate at half and twice the rate on its seeds, and at
    # the base rate on the seeds the verification did not decide on (2 here: 3 - 2 for each of the two)
    assert phase_trials(cfg.replace(rate_check=3))["verify"] == (8 + 12, 8 + 12 + 2)
    assert phase_trials(cfg.replace(rate_check=2))["verify"] == (8 + 8, 8 + 8)


def test_hours_from_a_calibration_over_the_slots(tmp_path: Path) -> None:
    cfg = tiny(tmp_path)
    cal = {"transformer": {"step_s": 0.5}, "gated_attention": {"step_s": 1.0}}
    est = estimate(cfg, calibration=cal, n_slots=2)
    steps = [steps_equivalent(cfg, a) for a in cfg.archs]
    assert steps[0] > 10  # ten steps plus the evaluations' share
    lo, hi = est.hours or (0, 0)
    lo_trials, hi_trials = trials_per_arch(cfg)  # 14 and 18: the noise floor's trials included
    assert lo == pytest.approx((lo_trials * 0.5 * steps[0] + lo_trials * 1.0 * steps[1]) / 2 / 3600)
    assert hi == pytest.approx(lo * hi_trials / lo_trials)
    text = est.text()
    assert "priced 500 ms a step" in text and "total:" in text and "2 trials at once" in text
    left = remaining_seconds(est, {"transformer": (2, 3), "gated_attention": (0, 0)})
    assert left == pytest.approx((2 * 0.5 * steps[0] / 2, 3 * 0.5 * steps[0] / 2))


def test_no_hours_without_seconds_and_a_note_says_why(tmp_path: Path) -> None:
    cfg = tiny(tmp_path)
    est = estimate(cfg, calibration={"transformer": {"step_s": None, "note": "too big to calibrate here"}}, n_slots=1)
    assert est.hours is None
    assert "no seconds (too big to calibrate here)" in est.text() and "FLOPs only" in est.text()
    assert remaining_seconds(est, {"transformer": (1, 1)}) is None
    assert remaining_seconds(est, {}) == (0.0, 0.0)  # nothing left: no seconds needed


def test_the_price_trains_nothing_and_is_kept_for_a_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A study's seconds come from its FLOPs at the measured matmul peak (`costs.price`), nothing
    trains; the price is a range, kept in cost.json and not worked out twice."""
    import tlmsearch.costs.calibrate as cal
    from tlmsearch.costs.price import REFERENCE_PEAK
    from tlmsearch.studies.cost import price_arch

    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("tlmsearch.training.hardware.matmul_peak", lambda device, dtype, cache_dir=None: REFERENCE_PEAK)
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: pytest.fail("trained to price a study"))
    monkeypatch.setattr("tlmsearch.training.trainer.train", lambda *a, **k: pytest.fail("trained to price a study"))
    cfg = tiny(tmp_path, archs=("transformer",), data=DataConfig(corpus="pydoc", cache_dir=str(tmp_path / "cache")))
    priced = price_arch(cfg, "transformer", n_slots=1)
    # a tiny step is below the smallest measured shape: its fixed 8 ms and the cpu-xs share
    assert priced["step_s"] == pytest.approx(priced["step_s_high"]) and 0.008 < priced["step_s"] < 0.02
    assert "FLOPs at 40% of this CPU's measured matmul peak" in priced["note"]
    study = tmp_path / "st"
    study.mkdir()
    kept = calibrate(cfg, study)["transformer"]
    assert kept == read_calibration(study)["transformer"]
    monkeypatch.setattr("tlmsearch.studies.cost.price_arch", lambda *a, **k: pytest.fail("priced twice"))
    assert calibrate(cfg, study)["transformer"] == kept


def test_a_price_range_spans_the_estimate(tmp_path: Path) -> None:
    cfg = tiny(tmp_path)
    cal = {"transformer": {"step_s": 0.5, "step_s_high": 1.0}, "gated_attention": {"step_s": 1.0}}
    est = estimate(cfg, calibration=cal, n_slots=1)
    steps = [steps_equivalent(cfg, a) for a in cfg.archs]
    lo_trials, hi_trials = trials_per_arch(cfg)
    lo, hi = est.hours or (0, 0)
    assert lo == pytest.approx(lo_trials * (0.5 * steps[0] + 1.0 * steps[1]) / 3600)
    assert hi == pytest.approx(hi_trials * (1.0 * steps[0] + 1.0 * steps[1]) / 3600)
    assert "priced 0.5-1 s a step" in est.text() and "how the range is formed" in est.text()


def test_measured_trials_rescale_the_calibration_of_the_others(tmp_path: Path) -> None:
    """The calibration ran under a load 4x heavier than the study meets: the Transformer's
    measured trials are 4x faster than its calibration said, so Gated Attention's calibrated
    seconds (no trial measured yet) are divided by 4 too."""
    from analysis_fakes import record

    from tlmsearch.rundir.records import RecordLog, TrialRecord

    cfg = tiny(tmp_path)
    cal = {"transformer": {"step_s": 0.4}, "gated_attention": {"step_s": 0.8}}
    steps = {a: steps_equivalent(cfg, a) for a in cfg.archs}
    study_dir = tmp_path / "study"
    log = RecordLog(study_dir / "transformer")
    for i in range(3):
        rec = record(f"t{i}", "uniform", 2.0, kind="verify", seed=i, max_steps=10)  # the trial's steps
        rec = {**rec, "wall_s": 0.1 * steps["transformer"]}
        log.append(TrialRecord.from_dict(rec))
    est = estimate(cfg, study_dir, calibration=cal, n_slots=1)
    by_arch = {a.arch: a for a in est.archs}
    assert by_arch["transformer"].trial_s == pytest.approx(0.1 * steps["transformer"])  # measured
    assert by_arch["gated_attention"].trial_s == pytest.approx(0.8 / 4 * steps["gated_attention"])
    assert "x0.25: measured / priced" in est.text()
    # nothing measured: the calibration as it is
    plain = {a.arch: a for a in estimate(cfg, tmp_path / "empty", calibration=cal, n_slots=1).archs}
    assert plain["gated_attention"].trial_s == pytest.approx(0.8 * steps["gated_attention"])


def test_verification_at_the_deciding_length_counts_as_longer_trials(tmp_path: Path) -> None:
    """A study that screens at 5 tokens per parameter verifies and transfers at 20
    (`config.deciding_train`): those trials count 4x a search trial (a little less: the final
    evaluation is the same), in the estimate, its text, the time left, and measured seconds,
    which are scaled to a search trial's steps."""
    from analysis_fakes import record

    from tlmsearch.core.base import screening_train
    from tlmsearch.rundir.records import RecordLog, TrialRecord
    from tlmsearch.studies.cost import _trial, phase_weights, weighted_trials

    screening = tiny(tmp_path, train=screening_train(eval_interval=50, batch_size=4, eval_windows=4))
    weights = phase_weights(screening, "transformer")
    assert weights["search"] == 1.0 and 3.5 < weights["verify"] == weights["transfer"] <= 4.0
    assert phase_weights(tiny(tmp_path), "transformer")["verify"] == 1.0  # steps given: one length
    assert phase_weights(screening.replace(verify_tokens_per_param=0.0), "transformer")["verify"] == 1.0
    spans = phase_trials(screening)
    lo, hi = weighted_trials(spans, weights)
    assert lo == pytest.approx(6 + 8 * weights["verify"]) and hi == pytest.approx(6 + 12 * weights["verify"])
    cal = {"transformer": {"step_s": 0.5}, "gated_attention": {"step_s": 1.0}}
    est = estimate(screening, calibration=cal, n_slots=1)
    t = est.archs[0]
    assert t.trial_units == (lo, hi) and t.flops[0] == pytest.approx(lo * t.flops_per_trial)
    assert "verification and transfer trials train" in est.text()
    # a finished 20-token verification trial of 40 s is a 10-s search trial at 4x the steps
    search_steps = _trial(screening, "transformer")[1].steps
    deciding_steps = _trial(screening, "transformer", deciding=True)[1].steps
    assert abs(deciding_steps - 4 * search_steps) <= 4  # each rounded up on its own
    study_dir = tmp_path / "study"
    rec = record("v", "uniform", 2.0, kind="verify", seed=1, max_steps=deciding_steps)
    RecordLog(study_dir / "transformer").append(TrialRecord.from_dict({**rec, "wall_s": 40.0}))
    measured = estimate(screening, study_dir, calibration=cal, n_slots=1).archs[0].measured_s
    assert measured == pytest.approx(40.0 * search_steps / deciding_steps)
