"""`tlmsearch train` stopped by a signal resumes to the uninterrupted numbers; progress off a TTY."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tlmsearch.cli import main
from tlmsearch.cli._train_progress import TrainProgress, duration

ARGS = ["--preset", "tiny", "--corpus", "pydoc", "--steps", "300", "--eval-interval", "100", "--threads", "1"]


def _curve(run: Path) -> list[tuple[float, float, float]]:
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [(m["step"], m["val_loss"], m["train_loss"]) for m in map(json.loads, lines)]


@pytest.mark.slow
def test_sigterm_mid_run_checkpoints_and_resumes_to_the_same_numbers(tmp_path: Path) -> None:
    env = {**os.environ, "TLMSEARCH_CACHE": str(tmp_path / "cache")}
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "tlmsearch", "train", *ARGS, "--runs-dir", str(runs)]
    proc = subprocess.Popen(
        [*cmd, "--name", "cut", "--progress-seconds", "0.5"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # the calibration line comes after a few steps: the run is under way
        seen.append(line)
        if line.startswith("estimate:"):
            proc.send_signal(signal.SIGTERM)
            break
    rest = proc.stdout.read()
    assert proc.wait(timeout=120) == 128 + signal.SIGTERM, "".join(seen) + rest
    last = rest.strip().splitlines()[-1]
    assert last.startswith("tlmsearch train: stopped by SIGTERM at step ") and "checkpoint saved" in last
    assert last.endswith(f"resume with: tlmsearch train --name cut --runs-dir {runs} --resume")
    stopped_at = int(last.split(" at step ")[1].split("/")[0])
    assert 0 < stopped_at < 300
    assert (runs / "cut" / "checkpoint" / "checkpoint.pt").is_file()

    resumed = subprocess.run([*cmd, "--name", "cut", "--resume", "--json"], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"steps {stopped_at + 1}-300" in resumed.stderr  # the plan names where it starts again
    whole = subprocess.run([*cmd, "--name", "whole", "--json"], env=env, capture_output=True, text=True)
    assert whole.returncode == 0, whole.stderr
    a, b = json.loads(resumed.stdout)["metrics"], json.loads(whole.stdout)["metrics"]
    for key in ("val_loss", "val_bpb", "train_loss", "steps", "tokens"):
        assert a[key] == b[key], key
    assert _curve(runs / "cut") == _curve(runs / "whole")
    assert not (runs / "cut" / "checkpoint").exists() and not (runs / "whole" / "checkpoint").exists()


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_progress_prints_plain_lines_at_the_interval_with_an_estimate() -> None:
    clock, out = _Clock(), io.StringIO()
    p = TrainProgress(1000, 512, out, interval_s=60.0, clock=clock)
    for step in range(1, 1001):
        clock.t += 0.5  # 0.5 s per step: 500 s in all
        p.on_step(step)
        if step == 500:
            p.on_eval(step, {"val_loss": 2.5, "val_ppl": 12.18, "val_bpb": 3.6})
    lines = out.getvalue().splitlines()
    assert lines[0] == "estimate: 0.5 s/step over steps 2-6 (1,024 tok/s) -> about 8m17s for the 994 steps left" + (
        " (evaluations add a little)"
    )
    assert all(line.startswith("step ") for line in lines[1:])
    assert len(lines) == 1 + 8 + 1  # one line a minute over 500 s (none in between), and the evaluation
    assert lines[1] == "step 126/1000 | 1,024 tok/s | ETA 7m17s | elapsed 1m03s"
    assert lines[5].startswith("step 500/1000 | 1,024 tok/s | ETA 4m10s | val 2.5000 (ppl 12.18, bpb 3.600)")


def test_progress_on_a_terminal_redraws_in_place() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    clock, out = _Clock(), Tty()
    p = TrainProgress(10, 100, out, clock=clock)
    for step in range(1, 11):
        clock.t += 1.0
        p.on_step(step)
    p.close()
    text = out.getvalue()
    assert "\r\033[Kstep 10/10 | 100 tok/s | ETA 0s" in text and text.endswith("\n")


def test_duration() -> None:
    assert [duration(s) for s in (4.6, 65, 3600 * 2 + 14 * 60 + 5)] == ["5s", "1m05s", "2h14m"]


@pytest.mark.slow  # two `tlmsearch train` runs in-process: 2.4-2.9 s, the slowest test of the development loop
def test_finished_run_keeps_no_checkpoint_unless_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("tlmsearch.training.trainer.matmul_peak", lambda device, dtype, cache_dir=None: 1e11)
    quick = [*ARGS[:4], "--steps", "6", "--eval-interval", "3", "--threads", "1", "--runs-dir", str(tmp_path)]
    assert main(["train", *quick, "--name", "a"]) == 0
    assert main(["train", *quick, "--name", "b", "--keep-checkpoint"]) == 0
    assert not (tmp_path / "a" / "checkpoint").exists()
    assert (tmp_path / "b" / "checkpoint" / "checkpoint.pt").is_file()


def test_train_runs_one_thread_unless_told() -> None:
    from tlmsearch.cli import build_parser
    from tlmsearch.cli.train import resolve_run_config

    parser = build_parser()
    assert resolve_run_config(parser.parse_args(["train", "--preset", "tiny"])).train.threads == 1
    assert resolve_run_config(parser.parse_args(["train", "--threads", "0"])).train.threads == 0  # torch's default
    assert resolve_run_config(parser.parse_args(["train", "--threads", "2"])).train.threads == 2
