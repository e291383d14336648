"""`ladder plan` says for each point how many GPUs a trial should take to end within
`--trial-hours` (default 24), from the price `tlmsearch plan` gives a trial of several GPUs: its
GPU time shared over g GPUs plus, every step, the ring all-reduce of its fp32 gradients
(2 (g-1)/g x 4 bytes x params over `--link-gb-s`), not overlapped. Values worked out by hand."""

from __future__ import annotations

import json

import pytest

from tlmsearch.cli import main
from tlmsearch.core.base import TrainConfig
from tlmsearch.costs.plan import gpus_within
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.ladders.plan import format_ladder_plan, plan_ladder


def test_the_fewest_gpus_within_the_hours_by_hand() -> None:
    # 10 h of GPU time, 1,000 steps, 1e9 parameters at 50 GB/s: a step's all-reduce on g GPUs is
    # 2 (g-1)/g x 4e9 / 50e9 = 0.16 (g-1)/g s, so a run takes 36000/g + 160 (g-1)/g s
    assert gpus_within(36000.0, 1000, 10**9, 10.0, 50.0, 8) == (1, 10.0)
    g, hours = gpus_within(36000.0, 1000, 10**9, 3.0, 50.0, 8)
    # g = 3: 12000 + 106.7 = 12106.7 s > 10800; g = 4: 9000 + 120 = 9120 s = 2.5333 h
    assert g == 4 and hours == pytest.approx(9120 / 3600)
    # 0.04 h = 144 s: no count does it; the best of 1..8 is 8: 4500 + 140 = 4640 s
    g, hours = gpus_within(36000.0, 1000, 10**9, 0.04, 50.0, 8)
    assert g is None and hours == pytest.approx(4640 / 3600)
    # a faster link: 450 GB/s, 3 h: g = 4 gives 9000 + 13.3 s
    assert gpus_within(36000.0, 1000, 10**9, 3.0, 450.0, 8)[0] == 4
    # all-reduce-bound: 100 s alone, 130 s on 2 (50 + 80): one GPU is the best there is
    assert gpus_within(100.0, 1000, 10**9, 0.02, 50.0, 8) == (None, pytest.approx(100 / 3600))


def ladder() -> LadderConfig:
    # cosine and uniform only: one model's FLOPs at each point
    return LadderConfig(
        points=("340m@20", "340m:d_model=2048,n_heads=32@20"),
        profiles=(),
        train=TrainConfig(batch_size=64, grad_accum=8),
    )


def test_each_point_of_the_ladder_by_hand() -> None:
    p = plan_ladder(ladder(), trial_hours=4)
    first = p["points"][0]
    # 340m@20: 11,762 steps, 1.4481117e19 FLOPs a run, 341,099,520 parameters; on an H100 SXM at MFU 0.4
    # (989.5e12 x 0.4 = 3.958e14 FLOP/s) 36,586.95 s alone (10.16 h); on 2 GPUs 18,293.5 + 11,762 x
    # 0.5 x 0.10916 = 18,614.4 s (5.17 h > 4); on 3: 12,195.65 + 11,762 x (2/3) x 0.10916 = 12,623.6 s = 3.5066 h
    assert (first["steps"], first["params_total"]) == (11762, 341099520)
    assert first["flops_per_run"] == pytest.approx(1.4481117e19, rel=1e-7)
    assert first["gpus_per_trial"] == 3 and first["trial_hours_on"] == pytest.approx(3.50656, abs=1e-4)
    assert p["trial_hours"] == 4 and p["link_gb_s"] == 50
    assert plan_ladder(ladder())["points"][0]["gpus_per_trial"] == 1  # 10.16 h within the default 24 h
    text = format_ladder_plan(p)
    assert "a run on 3 GPUs: 3.51 h" in text and "--trial-hours" in text and "50 GB/s (--link-gb-s)" in text
    # the all-reduce alone of the larger point at 1 GB/s: 31,204 steps x ~7 s: no count ends within 4 h
    slow = plan_ladder(ladder(), trial_hours=4, link_gb_s=1.0)["points"][1]
    assert slow["gpus_per_trial"] is None and slow["trial_hours_on"] > 4
    assert "no GPU count finishes a run within 4 h" in format_ladder_plan(
        plan_ladder(ladder(), trial_hours=4, link_gb_s=1.0)
    )


@pytest.mark.parametrize(("flag", "value"), [("--trial-hours", "0"), ("--link-gb-s", "-1"), ("--trial-hours", "nan")])
def test_nonsense_hours_or_links_are_refused_in_one_line(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ladder", "plan", "--points", "tiny@5", "cpu-xs@5", flag, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag.lstrip("-").replace("-", "_") in err[0], err


def test_the_command_prints_them(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["ladder", "plan", "--points", "340m@20", "340m:d_model=2048,n_heads=32@20"]
    argv += ["--batch-size", "64", "--grad-accum", "8", "--trial-hours", "4", "--json"]
    assert main(argv) == 0  # the default profiles: their FLOPs within 0.1 % of uniform's
    p = json.loads(capsys.readouterr().out)
    assert [q["gpus_per_trial"] for q in p["points"]] == [3, 24]


def test_the_api_refuses_a_bad_limit() -> None:
    with pytest.raises(ConfigError, match="trial_hours=-1 must be a finite number of hours above 0"):
        plan_ladder(ladder(), trial_hours=-1)
