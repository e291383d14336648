"""`search --dry-run` states the plan and its time estimate (stderr) before anything runs;
`--quiet` leaves it out. The estimate trains nothing: the FLOPs of the tiny model at the measured
matmul peak (`costs.price`), or the rates recorded by earlier runs of the shape."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tlmsearch.cli import main

ARGS = ["search", "--preset", "tiny", "--corpus", "pydoc", "--steps", "60", "--trials", "6", "--batch-size", "4",
        "--eval-windows", "4", "--name", "plan", "--dry-run"]  # fmt: skip
LINE = re.compile(
    r"^search plan: 6 trials x 60 steps after 2 noise-floor runs of uniform "
    r"\(4 baselines in full; ASHA may stop the other 2 at step \d+\), "
    r"\d+ at a time x 1 thread \(transformer, tiny, cpu\); estimate (about )?[\dhms]+(-[\dhms]+)? "
    r"\([\d.e-]+ s/step, [\d,]+ tok/s: FLOPs at \d+% of this CPU's measured matmul peak"
)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    peak = lambda device, dtype, cache_dir=None: 1e11  # noqa: E731 - the measured peak is tested apart
    monkeypatch.setattr("tlmsearch.training.trainer.matmul_peak", peak)
    monkeypatch.setattr("tlmsearch.training.hardware.matmul_peak", peak)
    monkeypatch.setattr("tlmsearch.costs.calibrate.current_load", lambda cores: 0.0)  # the load's range: test_calibrate


def test_dry_run_prints_the_plan_line_with_an_estimate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tlmsearch.training.trainer.train", lambda *a, **k: pytest.fail("trained to price"))
    assert main([*ARGS, "--runs-dir", str(tmp_path / "runs")]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["trials"] == 6  # stdout stays the resolved config
    assert LINE.match(err.strip()), err
    assert not (tmp_path / "runs" / "plan").exists()  # a dry run starts nothing and writes no run


def test_recorded_rates_replace_the_calibration(tmp_path: Path) -> None:
    from tlmsearch.configs.resolve import trial_shape
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.costs.rates import rate_shape, record_rate
    from tlmsearch.profiles import ProfileSpec
    from tlmsearch.training.trainer import resolve_vocab
    from tlmsearch.tuning.announce import fixed_line, search_line
    from tlmsearch.tuning.trainable import trial_train_config

    cfg = SearchConfig(preset="tiny", name="plan", trials=6, train=TrainConfig(steps=60, batch_size=4, eval_windows=4),
                       data=DataConfig(corpus="pydoc"))  # fmt: skip
    model = resolve_vocab(trial_shape(cfg, ProfileSpec.parse("uniform"))[2], cfg.data)
    shape = rate_shape(model.to_dict(), trial_train_config(cfg, 0).to_dict(), "cpu")
    for s in (0.1, 0.2):
        record_rate(cfg.data.cache_path(), shape, s, 1.0, "test")
    line = search_line(cfg, cpus=2)
    # the range and its source come from the recorded rates (their arithmetic: test_estimate.py)
    assert line.endswith("(0.1-0.2 s/step, 640-1,280 tok/s: measured in 2 earlier runs of this shape)"), line
    assert "2 at a time" in line
    # a resume with one trial left, or one fixed run, trains one at a time whatever the slots
    assert "5 of 6 trials left" in search_line(cfg, done=1, cpus=2)
    assert ", 1 at a time x 1 thread" in search_line(cfg, done=5, cpus=2)
    assert ", 2 at a time x 1 thread" in search_line(cfg, done=4, cpus=2)
    assert "verify plan: 1 run x 60 steps, 1 at a time" in fixed_line(cfg, 1, "verify plan", cpus=2)
    assert "verify plan: 3 runs x 60 steps, 2 at a time" in fixed_line(cfg, 3, "verify plan", cpus=2)


def test_quiet_leaves_the_plan_line_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--runs-dir", str(tmp_path / "runs"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_baselines_the_trial_count_leaves_out_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a if a != "6" else "2" for a in ARGS]  # --trials 2: room for 2 of the 4 baselines
    assert main([*argv, "--runs-dir", str(tmp_path / "runs")]) == 0
    note, line = capsys.readouterr().err.strip().splitlines()[-2:]
    assert note == (
        "note: 2 trials leave room for 2 of the 4 baselines: linear:start=1.5,end=0.5, cosine:start=0.5,end=1.5 "
        "not run (--trials 4 or more runs them all)"
    )
    assert line.startswith("search plan: 2 trials x 60 steps")


def test_a_search_without_baselines_says_so_plainly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--no-baselines", "--runs-dir", str(tmp_path / "runs")]) == 0
    err = capsys.readouterr().err
    assert "(ASHA may stop any of them at step" in err and "0 baselines" not in err and "note:" not in err, err


def test_the_plan_line_says_the_load_it_expects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tlmsearch.costs.calibrate.current_load", lambda cores: 1.7)  # read before anything is timed
    assert main([*ARGS, "--runs-dir", str(tmp_path / "runs")]) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.search(r"s/step, [\d,]+-[\d,]+ tok/s: FLOPs at .*, x[\d.]+-[\d.]+ for \d runs? of 1 thread", line)
    assert line.endswith("beside a load of 1.7)"), line


def test_one_trial_reads_in_the_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a ladder point's search is one uniform trial: "1 trial x 60 steps", never "1 trials"
    argv = [a if a != "6" else "1" for a in ARGS]
    assert main([*argv, "--noise-seeds", "0", "--runs-dir", str(tmp_path / "runs")]) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("search plan: 1 trial x 60 steps, ") and "trials" not in line, line
