"""The live search line (`tuning.progress.ProgressView`) off a terminal: a fake clock, fake
trials, the step files running trials leave; no Ray is started."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from tlmsearch.core.base import TrainConfig
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning import progress as progress_module
from tlmsearch.tuning.progress import ProgressView, Running, running_from, running_name, trial_name
from tlmsearch.tuning.trainable import TRIAL_TMP_ENV, progress_file, read_progress, write_progress


class FakeWriter:
    def __init__(self) -> None:
        self.cfg = SimpleNamespace(train=TrainConfig(steps=120))
        self.written: list[TrialRecord] = []

    def all_records(self) -> list[TrialRecord]:
        return list(self.written)


def test_plain_lines_at_least_once_a_minute_with_steps_speed_and_eta(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TRIAL_TMP_ENV, str(tmp_path))
    path = progress_file("7a3c_00005")
    assert path is not None
    write_progress(path, 57, 120, 0.5, 2048)  # what the trial's step callback writes
    trials = [
        SimpleNamespace(trial_id="7a3c_00005", status="RUNNING", config={"profile": "knots:k0=1,k1=2"}),
        SimpleNamespace(trial_id="7a3c_00006", status="RUNNING", config={"profile": "uniform", "baseline": "uniform"}),
        SimpleNamespace(trial_id="7a3c_00001", status="TERMINATED", config={"profile": "uniform"}),
    ]
    now = [1000.0]
    out = io.StringIO()
    view = ProgressView("demo", 8, FakeWriter(), stream=out, clock=lambda: now[0])  # type: ignore[arg-type]
    view.setup()
    view.on_trial_result(0, trials, trials[1], {"step": 40})  # an evaluation of the other trial
    printed_at = []
    for t in range(0, 301, 5):  # Tune calls on_step_end many times a second; the clock says when
        now[0] = 1000.0 + t
        before = out.getvalue().count("\n")
        view.on_step_end(0, trials)
        if out.getvalue().count("\n") > before:
            printed_at.append(t)
    gaps = [b - a for a, b in zip([0, *printed_at], printed_at, strict=False)]
    assert printed_at and max(gaps) <= 60, printed_at
    last = out.getvalue().splitlines()[-1]
    assert "\r" not in out.getvalue()  # plain lines off a terminal
    assert "2 running: 7a3c_00005 knots step 57/120 4,096 tok/s ETA 32s; 7a3c_00006 uniform step 40/120" in last


def test_a_short_interval_prints_more_often() -> None:
    now = [0.0]
    out = io.StringIO()
    view = ProgressView("demo", 2, FakeWriter(), stream=out, interval=2.0, clock=lambda: now[0])  # type: ignore[arg-type]
    view.setup()
    for t in range(11):
        now[0] = float(t)
        view.on_step_end(0, [])
    assert out.getvalue().count("\n") == 5  # at 2, 4, 6, 8 and 10 s


def test_running_trials_are_named_as_their_records_will_be() -> None:
    rec = TrialRecord(trial_id="ab_00003", kind="verify", baseline="cosine:start=1.5,end=0.5", seed=2,
                      profile={"family": "cosine", "params": {}})  # fmt: skip
    config = {"item": {"profile": "cosine:start=1.5,end=0.5", "baseline": "cosine:start=1.5,end=0.5", "seed": 2,
                       "kind": "verify"}}  # fmt: skip
    assert running_name("ab_00003", config) == trial_name(rec) == "ab_00003 cosine:start=1.5,end=0.5 seed 2"
    sampled = TrialRecord(trial_id="ab_00007", profile={"family": "knots", "params": {}})
    assert running_name("ab_00007", {"profile": "knots:k0=1", "number": 3}) == trial_name(sampled)


def test_running_from_a_step_file_or_the_last_evaluation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert running_from("t", {"step": 10, "steps": 100, "s_per_step": 0.1, "tokens_per_step": 100}, 0, 100) == Running(
        "t", 10, 100, pytest.approx(1000.0), pytest.approx(9.0)
    )
    assert running_from("t", None, 50, 100) == Running("t", 50, 100)
    assert running_from("t", {"step": "garbled"}, None, 100) == Running("t", 0, 100)
    monkeypatch.delenv(TRIAL_TMP_ENV, raising=False)
    assert progress_file("t") is None and read_progress("t") is None  # no scratch folder: a joined cluster
    monkeypatch.setenv(TRIAL_TMP_ENV, str(tmp_path))
    assert read_progress("t") is None  # nothing written yet


def _records(n: int) -> list[TrialRecord]:
    return [TrialRecord(trial_id=f"ab_{i:05d}", status="complete", profile={"family": "knots", "params": {}},
                        metrics={"val_loss": 5.0 - i / 10}, full_fidelity=True)
            for i in range(n)]  # fmt: skip


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_a_terminal_line_fits_its_width(width: int) -> None:
    from tlmsearch.tuning.progress import summary_line

    trials = [Running(f"ab_{i:05d} knots", 57, 120, 4096.0, 30.0 + i) for i in range(4)]
    line = summary_line("a-long-search-name", _records(3), 8, 4, 65.0, trials=trials, width=width)
    assert len(line) <= width
    plain = summary_line("a-long-search-name", _records(3), 8, 4, 65.0, trials=trials)
    assert len(plain) > 200 and "ab_00003 knots step 57/120" in plain  # a log keeps everything
    if width >= 80:  # the most important first: phase, done/total, best, time left
        assert line.startswith("search a-long-search-name | 3/8 ended | best 4.8000 | ")
        assert " left" in line
    if width >= 200:  # the count and the longest ETA replace the details
        assert "4 running, longest ETA 33s" in line


def test_on_a_terminal_the_line_is_rewritten_in_place_within_the_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        progress_module.shutil, "get_terminal_size", lambda fallback=(80, 24): __import__("os").terminal_size((80, 24))
    )

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    now = [0.0]
    view = ProgressView("demo-with-a-long-name", 8, FakeWriter(), stream=out, clock=lambda: now[0])  # type: ignore[arg-type]
    view.setup()
    trials = [
        SimpleNamespace(trial_id=f"ab_{i:05d}", status="RUNNING", config={"profile": "knots:k0=1"}) for i in range(6)
    ]
    for t in range(1, 6):
        now[0] = float(t)
        view.on_step_end(0, trials)
    text = out.getvalue()
    assert "\n" not in text  # rewritten in place, never a new row
    assert all(len(chunk) <= 79 for chunk in text.replace("\033[K", "").split("\r") if chunk)


def test_trials_that_have_a_record_are_not_shown_running(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    writer = FakeWriter()
    view = ProgressView("demo", 2, writer, stream=out)  # type: ignore[arg-type]
    view.setup()
    writer.written.extend(_records(2))
    # Tune may still list the last trial as RUNNING when the experiment ends
    trials = [SimpleNamespace(trial_id="ab_00001", status="RUNNING", config={"profile": "knots:k0=1"})]
    view.on_trial_complete(0, trials, trials[0])
    view.on_experiment_end(trials)
    lines = out.getvalue().splitlines()
    assert "2/2 ended" in lines[-1] and "0 running" in lines[-1] and "step" not in lines[-1]
    assert sum("2/2 ended" in x for x in lines) == 1  # a log does not repeat the last trial's line at the end


def test_at_80_columns_phase_done_best_and_time_left_show(monkeypatch: pytest.MonkeyPatch) -> None:
    """By hand: 3 trials ended in 10 s each, 4 running with ETAs 30-33 s, 1 of 8 waiting: the
    longest ETA (33 s) and one round of the mean trial (10 s) = 43 s left."""
    from tlmsearch.tuning.progress import search_left, summary_line

    records = [TrialRecord(**{**r.to_dict(), "wall_s": 10.0}) for r in _records(3)]
    trials = [Running(f"ab_{i:05d} knots", 57, 120, 4096.0, 30.0 + i) for i in range(4)]
    assert search_left(records, 8, trials, 4) == pytest.approx((43.0, 43.0))
    assert search_left(_records(3), 8, [], 4) is None  # no trial time known yet while trials wait
    name = "transformer-knots-tpe-20261204-191010"  # a default run name: 37 characters
    line = summary_line(name, records, 8, 4, 65.0, trials=trials, width=79)
    assert len(line) <= 79
    phase, done, best, left = line.split(" | ")[:4]
    assert phase == "search transformer-knots-t…" and done == "3/8 ended"
    assert best == "best 4.8000" and left == "43s left"
    plain = summary_line(name, records, 8, 4, 65.0, trials=trials)
    assert plain.endswith("| 43s left") and name in plain  # a log keeps every field


def test_the_study_line_at_80_columns_puts_the_time_left_and_the_busy_first() -> None:
    from tlmsearch.studies.progress import ArchProgress, study_line

    rows = [
        ArchProgress("transformer", "done", True, 0, (0, 0), "near_optimal", (0, 0)),
        ArchProgress("gated_attention", "verify", True, 12, (55, 220), "cosine 4.6120", (200, 800)),
        ArchProgress("titans", "search", True, 7, (34, 34), "knots 4.7000", (250, 900)),
        ArchProgress("hope_attention", "search", False, 0, (34, 34), "", (300, 950)),
    ]
    full = study_line("reference-study", rows, (3600.0, 7200.0), 125.0)
    assert len(full) > 80 and full.endswith(" | left 60.0 min-2.0 h")  # a log: the time left last
    line = study_line("reference-study", rows, (3600.0, 7200.0), 125.0, width=79)
    assert len(line) <= 79
    parts = line.split(" | ")
    assert parts[0] == "study referen…" and parts[1] == "left 60.0 min-2.0 h"
    assert parts[2].startswith("gated_at verify 12/55-220 cosine 4.6120")  # phase, done/total, best
