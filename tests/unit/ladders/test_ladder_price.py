"""`ladder run` as the other long commands: `--gpus-per-trial auto` by default (one GPU a trial
where torch sees CUDA, mocked here; the CPU otherwise), resolved once and written into
ladder.yaml; priced before anything trains, and refused past --max-hours (default 12) in one
line, exit 2, before any directory is made, unless --yes."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

import tlmsearch
from tlmsearch import api
from tlmsearch.cli import build_parser, main
from tlmsearch.cli.ladder import build_config
from tlmsearch.costs.estimate import Rate
from tlmsearch.errors import UserError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.tuning import ladder as ladder_mod

SMALL = ["tiny:n_layers=4@0.25", "tiny:n_layers=4,d_model=48,n_heads=3,base_width=96@0.25"]  # one depth, head size 16
# 8 layers of cpu-s (head size 32) at 20 tokens per parameter: days on one CPU
BIG = ["cpu-s:d_model=64,n_heads=2,base_width=192@20", "cpu-s@20"]


@pytest.fixture(autouse=True)
def _no_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("tlmsearch.training.hardware.matmul_peak", lambda device, dtype, cache_dir=None: 9.06e10)
    monkeypatch.setattr("tlmsearch.costs.calibrate.current_load", lambda cores: 0.0)
    monkeypatch.setattr("tlmsearch.costs.calibrate.calibrate", lambda *a, **k: pytest.fail("trained to price"))
    monkeypatch.setattr(ladder_mod.runner, "search", lambda cfg, **kw: None)  # the search phase trains nothing
    monkeypatch.setattr(
        ladder_mod.verifying, "verify", lambda run_dir, **kw: SimpleNamespace(verdicts=[], new_records=[])
    )


def cuda(monkeypatch: pytest.MonkeyPatch, devices: int) -> None:
    """torch reports `devices` CUDA devices (an H200 each)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: devices > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: devices)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "NVIDIA H200")


def _small(tmp_path: Path, **extra: Any) -> LadderConfig:
    return LadderConfig.from_dict(
        {"name": "lad", "runs_dir": str(tmp_path), "points": SMALL, "profiles": [], "seeds": 2,
         "lr_calibration": "off", "data": {"corpus": "pydoc"}, **extra}
    )  # fmt: skip


def test_auto_is_the_default_of_the_config_and_the_flag(tmp_path: Path) -> None:
    assert LadderConfig(points=tuple(SMALL)).gpus_per_trial == "auto"
    argv = ["ladder", "run", "--points", *SMALL, "--runs-dir", str(tmp_path)]
    assert build_config(build_parser().parse_args(argv)).gpus_per_trial == "auto"
    assert build_config(build_parser().parse_args([*argv, "--gpus-per-trial", "0.5"])).gpus_per_trial == 0.5
    assert main([*argv, "--gpus-per-trial", "some"]) == 2


@pytest.mark.parametrize("devices", [0, 2])
def test_auto_trains_on_cuda_where_torch_sees_it_and_on_the_cpu_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], devices: int
) -> None:
    from tlmsearch.tuning.resources import trial_device_kind

    cuda(monkeypatch, devices)
    ladder_dir = ladder_mod.start_ladder(_small(tmp_path), progress=True)
    saved = yaml.safe_load((ladder_dir / "ladder.yaml").read_text())
    assert saved["gpus_per_trial"] == (1.0 if devices else 0.0)  # resolved once, here, and written out
    point = LadderConfig.from_dict(saved).point_configs()[0]
    assert point.gpus_per_trial == (1.0 if devices else 0.0)
    assert trial_device_kind(point) == ("cuda" if devices else "cpu")
    line = next(x for x in capsys.readouterr().err.splitlines() if x.startswith("ladder lad:"))
    assert ("(transformer, cuda, 1 GPU a trial)" if devices else "(transformer, cpu)") in line, line
    assert ("NVIDIA H200" if devices else "this CPU's measured matmul peak") in line, line


def test_the_price_adds_up_every_points_runs_at_its_rate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cuda(monkeypatch, 0)
    monkeypatch.setattr("tlmsearch.tuning.announce._rate", lambda cfg, at_once: Rate(1.0, 2.0))
    monkeypatch.setattr("tlmsearch.training.hardware.cpu_count", lambda: 1)  # one run at a time
    cfg = _small(tmp_path)
    steps = [c.train.steps for c in cfg.point_configs()]
    found = ladder_mod.ladder_estimate(cfg)
    # a point: its uniform run, then cosine and uniform x 2 seeds = 5 runs, one after another
    assert (found.low_s, found.high_s) == (5 * sum(steps) * 1.0, 5 * sum(steps) * 2.0)
    assert "2 points, 10 runs counted at full length" in ladder_mod.ladder_price_line(cfg, found)
    planned = ladder_mod.ladder_estimate(_small(tmp_path, seeds=0, pilot_seeds=3, max_seeds=5))
    # planned seeds: 1 + 2 x 3 pilot seeds (fastest) .. 1 + 2 x 5 (slowest) a point
    assert (planned.low_s, planned.high_s) == (7 * sum(steps) * 1.0, 11 * sum(steps) * 2.0)


def test_a_ladder_past_the_limit_is_refused_in_one_line_before_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cuda(monkeypatch, 0)
    runs = tmp_path / "runs"
    argv = ["ladder", "run", "--points", *BIG, "--runs-dir", str(runs), "--name", "big"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "ladder big is priced at up to" in err and "beyond the 12 h limit" in err, err
    assert "--points" in err and "--yes" in err and "Traceback" not in err
    assert not runs.exists()
    with pytest.raises(UserError, match="beyond the 12 h limit"):
        tlmsearch.ladder(points=tuple(BIG), runs_dir=str(runs), name="big")
    assert not runs.exists()


def test_with_yes_it_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cuda(monkeypatch, 0)
    started: list[Path] = []
    monkeypatch.setattr(ladder_mod, "run_ladder", lambda d, **kw: started.append(Path(d)) or Path(d))
    monkeypatch.setattr(api, "_finish_ladder", lambda d, progress: api.LadderResult(d, {"conclusion": "done"}))
    runs = tmp_path / "runs"
    argv = ["ladder", "run", "--points", *BIG, "--runs-dir", str(runs), "--name", "big"]
    assert main([*argv, "--yes"]) == 0
    assert started == [(runs / "big").resolve()] and (runs / "big" / "ladder.yaml").is_file()
    assert "ladder big: 2 points" in capsys.readouterr().err
    assert main([*argv[:-1], "big2", "--max-hours", "0"]) == 0  # 0 = no limit
    assert tlmsearch.ladder(points=tuple(BIG), runs_dir=str(runs), name="big3", yes=True).run_dir == runs / "big3"
