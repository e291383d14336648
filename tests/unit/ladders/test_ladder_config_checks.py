"""A ladder's config refuses what its run would silently change (issue 50, items 2, 6, 7, 8):
the seed plan is checked where plan, run and resume all load it; one shape under two spellings is
one point; every point override reaches the model it trains; the plan counts each profile once as
the verification trains it, and prices CPU-hours only at a finite positive FLOP rate."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tlmsearch.cli import main
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.ladders.plan import ladder_costs, plan_ladder, profile_count
from tlmsearch.ladders.points import PointSpec, parse_point

DEEP = ("tiny:n_layers=4@1", "tiny:n_layers=4,d_model=48,n_heads=3@1")  # one depth and head size, 4 layers


def _one_line(capsys: pytest.CaptureFixture[str], argv: list[str], *words: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, err


def test_planned_seeds_need_two_after_the_pilot_in_plan_run_and_a_saved_ladder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seeds = ["--seeds", "auto", "--pilot-seeds", "5", "--max-seeds", "6"]
    _one_line(capsys, ["ladder", "plan", "--points", *DEEP, *seeds], "--max-seeds=6", ">= 7")
    _one_line(capsys, ["ladder", "run", "--points", *DEEP, *seeds, "--runs-dir", str(tmp_path), "--name", "l"], ">= 7")
    assert not (tmp_path / "l").exists()
    LadderConfig(points=DEEP, seeds=0, pilot_seeds=5, max_seeds=7)  # the least cap that leaves 2: allowed
    LadderConfig(points=DEEP, seeds=4, pilot_seeds=5, max_seeds=3)  # fixed seeds: no pilot, nothing to check
    saved = tmp_path / "old"
    saved.mkdir()
    (saved / "ladder.yaml").write_text(f"points: {list(DEEP)}\nseeds: 0\npilot_seeds: 3\nmax_seeds: 4\n")
    _one_line(capsys, ["ladder", "resume", str(saved)], "--max-seeds=4", ">= 5")


@pytest.mark.parametrize(
    ("points", "words"),
    [
        (("tiny:n_layers=2@1", "tiny@1"), "tiny:n_layers=2@1 and tiny@1 are one point"),  # tiny has 2 layers
        (("tiny:d_model=48,n_heads=3@1", "tiny:n_heads=3,d_model=48@1"), "are one point"),  # another order
        (("tiny:base_width=64@2", "tiny@2"), "are one point"),  # the preset's own budget
        (("tiny:n_layers=3,n_layers=4@1", "tiny@1"), "n_layers is given twice"),
    ],
)
def test_one_shape_is_one_point_and_a_key_is_given_once(points: tuple[str, ...], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        LadderConfig(points=points)


def test_same_shape_at_two_lengths_is_two_points() -> None:
    assert LadderConfig(points=("tiny:n_layers=2@1", "tiny@2")).points == ("tiny:n_layers=2@1", "tiny@2")


def test_every_override_reaches_the_model_it_trains(capsys: pytest.CaptureFixture[str]) -> None:
    """vocab_size=5 was priced at vocab 5 and trained at the tokenizer's 256; now refused."""
    from tlmsearch.ladders.points import check_overrides_reach

    with pytest.raises(ConfigError, match="vocab_size is not a point's: the vocabulary is the tokenizer's"):
        parse_point("tiny:vocab_size=5@1")
    _one_line(capsys, ["ladder", "plan", "--points", "tiny:vocab_size=5@1", "tiny@1"], "vocab_size", "tokenizer")
    cfg = LadderConfig(points=("tiny@1", "tiny@2"))
    lost = PointSpec(text="tiny:d_model=48@1", preset="tiny", model={"d_model": 48}, tokens_per_param=1.0)
    with pytest.raises(ConfigError, match=r"d_model=48 does not reach the model it trains \(d_model=32\)"):
        check_overrides_reach(lost, cfg.point_config(cfg.specs[0]))
    kept = PointSpec(text="tiny:n_layers=2@1", preset="tiny", model={"n_layers": 2}, tokens_per_param=1.0)
    check_overrides_reach(kept, cfg.point_config(cfg.specs[0]))


def test_plan_counts_a_profile_spelled_two_ways_once() -> None:
    base = LadderConfig(points=DEEP, lr_calibration="off", seeds=2)
    n = profile_count(base)  # cosine, uniform and the literature's at 4 layers, as verify builds them
    assert n == profile_count(base.replace(profiles=("literature", "openelm")))  # openelm is in literature
    explicit = base.replace(profiles=("literature", "cosine:start=1.5,end=0.5"))  # the reference, trained anyway
    assert profile_count(explicit) == n
    assert [c.runs_low for c in ladder_costs(explicit)] == [1 + n * 2] * 2
    other = base.replace(reference="linear:start=1.25,end=0.75", profiles=("uniform",))
    assert profile_count(other) == 3  # the chosen reference, cosine and uniform


@pytest.mark.parametrize("flops", ["nan", "inf", "0", "-1e9"])
def test_plan_refuses_a_cpu_rate_not_finite_and_positive(flops: str, capsys: pytest.CaptureFixture[str]) -> None:
    _one_line(capsys, ["ladder", "plan", "--points", *DEEP, f"--cpu-flops={flops}"], "cpu_flops", "above 0")
    cfg = LadderConfig(points=DEEP, lr_calibration="off")
    assert plan_ladder(cfg)["cpu_hours"] is None
    assert math.isfinite(plan_ladder(cfg, cpu_flops=1e10)["cpu_hours"][0])
    with pytest.raises((ConfigError, UserError)):
        plan_ladder(cfg, cpu_flops=float(flops))
