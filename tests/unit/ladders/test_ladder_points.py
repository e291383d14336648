"""Ladder points, targets, the config and the plan: parsing, exact counts, refusals."""

from __future__ import annotations

import math

import pytest

from tlmsearch.configs.presets import preset
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.ladders.plan import ladder_costs, plan_ladder, profile_count
from tlmsearch.ladders.points import parse_count, parse_point, point_size, target_of
from tlmsearch.models.counts import count_params, flops_per_token


def test_parse_point_with_overrides_and_name():
    p = parse_point(" tiny : n_layers=3 , d_model=48 @ 5 ")
    assert (p.preset, p.model, p.tokens_per_param) == ("tiny", {"n_layers": 3, "d_model": 48}, 5.0)
    assert p.text == "tiny:n_layers=3,d_model=48@5" and p.name == "tiny-n_layers3-d_model48-t5"
    assert parse_point("cpu-xs@20").name == "cpu-xs-t20"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("tiny", "SHAPE@TOKENS_PER_PARAM"),
        ("tiny@a", "no number"),
        ("tiny@0", "positive"),
        ("tiny@inf", "positive"),
        ("huge@5", "preset 'huge' is unknown"),
        ("tiny:n_layers@5", "KEY=VALUE"),
        ("tiny:n_layers=x@5", "whole number"),
        ("tiny:colour=3@5", "unknown ModelConfig field"),
        ("tiny@5@6", "SHAPE@TOKENS_PER_PARAM"),
    ],
)
def test_bad_points_are_one_line(text, words):
    with pytest.raises(ConfigError, match=words):
        parse_point(text)


def test_point_compute_is_exact_flops_per_token_times_tokens():
    cfg = LadderConfig(points=("tiny@5", "cpu-xs@20"))
    pcs = cfg.point_configs()
    model = preset("cpu-xs").model_config("transformer")
    n = count_params(model).non_embedding
    size = point_size(pcs[1])
    assert size.non_embedding == n
    tokens_per_step = pcs[1].train.tokens_per_step * model.seq_len
    assert size.steps == math.ceil(20 * n / tokens_per_step) and size.tokens == size.steps * tokens_per_step
    assert size.compute == flops_per_token(model) * size.tokens
    assert point_size(pcs[0]).compute < size.compute


def test_targets():
    assert parse_count("440m") == 440e6 and parse_count("1.3B") == 1.3e9 and parse_count("2.5e8") == 2.5e8
    assert parse_count("x") is None and parse_count("0") is None
    t = target_of("440m", "transformer", 20)
    assert t.compute == 6 * 440e6 * 20 * 440e6 and "6 N" in t.how
    p = target_of("340m", "transformer", 20)
    model = preset("340m").model_config("transformer")
    n = count_params(model).non_embedding
    assert p.compute == flops_per_token(model) * 20 * n and p.params == n
    with pytest.raises(ConfigError, match="neither a preset"):
        target_of("big", "transformer", 20)


def test_config_round_trips_and_refuses():
    cfg = LadderConfig(points=("tiny@5", "cpu-xs@20"), best="linear:start=1.5,end=0.5", seeds=0)
    assert LadderConfig.from_dict(cfg.to_dict()) == cfg and cfg.verify_seeds == "auto"
    assert "openelm:start=0.5,end=4" in cfg.controls
    for bad, words in [
        ({"points": ["tiny@5"]}, "at least 2 points"),
        ({"points": ["tiny@5", "tiny@5.0"]}, "repeat a point"),
        ({"points": ["tiny@5", "tiny@6"], "seeds": 1}, "seeds=1"),
        ({"points": ["tiny@5", "tiny@6"], "target": "x"}, "neither a preset"),
        ({"points": ["tiny@5", "tiny@6"], "profiles": ["zigzag"]}, "zigzag"),
        ({"points": ["tiny@5", "tiny@6"], "profiles": ["cosine", "cosine"]}, "repeat a profile"),
        ({"points": ["tiny@5", "tiny@6"], "train": {"tokens_per_param": 3}}, "its points'"),
        ({"points": ["tiny@5", "tiny@6"], "alpha": 0.7}, "alpha"),
    ]:
        with pytest.raises(ConfigError, match=words):
            LadderConfig.from_dict(bad)


def test_plan_counts_runs_and_flops():
    cfg = LadderConfig(
        points=("tiny@5", "cpu-xs:n_layers=2@20"), profiles=("linear:start=1.25,end=0.75",), seeds=3,
        lr_calibration="off",
    )  # fmt: skip
    assert profile_count(cfg) == 3
    costs = ladder_costs(cfg)
    assert [c.runs_low for c in costs] == [1 + 3 * 3] * 2
    calibrated = ladder_costs(cfg.replace(lr_calibration="1e-3,2e-3,4e-3,8e-3", lr_calibration_fraction=0.5))
    assert [c.runs_low for c in calibrated] == [1 + 6 + 3 * 3] * 2  # 4 rates x 3 paired seeds at half the length
    one = ladder_costs(cfg.replace(lr_calibration="1e-3,2e-3,4e-3,8e-3", lr_calibration_seeds=1))
    assert [c.runs_low for c in one] == [1 + 4 + 3 * 3] * 2  # 4 rates x 1 seed at the point's length
    p = plan_ladder(cfg, cpu_flops=1e10)
    flops = sum(c.compute * 10 for c in costs)
    assert p["flops"] == [flops, flops] and p["cpu_hours"][0] == pytest.approx(flops / 1e10 / 3600)
    planned = plan_ladder(cfg.replace(seeds=0, lr_calibration="auto"))
    assert planned["points"][0]["runs"][0] < planned["points"][0]["runs"][1]
    with pytest.raises(ConfigError, match="gpu='tpu'"):
        plan_ladder(cfg, gpu="tpu")
    with pytest.raises(ConfigError, match="step_ms=-1"):
        plan_ladder(cfg, step_ms=-1.0)


def test_plan_prices_small_points_by_their_steps():
    """Tiny points are bound by a step's launches, not its FLOPs: at least `step_ms` a step."""
    cfg = LadderConfig(points=("tiny@5", "cpu-xs:n_layers=2@20"), seeds=3, lr_calibration="off")
    costs = ladder_costs(cfg)
    floor = plan_ladder(cfg, step_ms=10.0)
    steps_s = sum(c.runs_low * c.steps * 0.010 for c in costs)
    assert floor["gpu_hours"][0] == pytest.approx(steps_s / 3600)
    assert all(q["step_bound"] for q in floor["points"])
    flops_only = plan_ladder(cfg, step_ms=0.0)
    assert flops_only["gpu_hours"][0] == pytest.approx(flops_only["flops"][0] / (989.5e12 * 0.4) / 3600)
    assert not any(q["step_bound"] for q in flops_only["points"])


def test_plan_prices_each_joint_profile_at_its_own_flops_and_refuses_one_a_point_cannot_build():
    """A whole-block bowtie held at equal parameters trains fewer FLOPs than uniform at cpu-xs
    (its narrow blocks); the plan prices its runs so, not at uniform's. A profile a point cannot
    build is one line naming the point, before anything trains."""
    from tlmsearch.configs.resolve import resolve_model
    from tlmsearch.models.counts import flops_per_token
    from tlmsearch.profiles import ProfileSpec

    bowtie = "joint:mode=block,ratio=0.3,position=0.75"
    cfg = LadderConfig(points=("tiny@5", "cpu-xs@5"), profiles=(bowtie,), seeds=2, lr_calibration="off")
    (tiny, xs) = ladder_costs(cfg)
    ratio = flops_per_token(resolve_model("cpu-xs", "transformer", {}, ProfileSpec.parse(bowtie))[2]) / (
        flops_per_token(resolve_model("cpu-xs", "transformer", {}, ProfileSpec.parse("uniform"))[2])
    )
    assert ratio < 0.99  # the case: the bowtie moves the FLOPs
    assert xs.profile_compute == pytest.approx(xs.compute * (2 + ratio) / 3)  # cosine, uniform, the bowtie
    assert xs.flops_low == pytest.approx(xs.compute * (1 + 2 * (2 + ratio)))  # the point's uniform run + 3 x 2 seeds
    assert tiny.profile_compute == tiny.compute  # at 2 layers the bowtie keeps uniform's FLOPs
    with pytest.raises(ConfigError, match=r"point 170m@20: profile joint:mode=block.* cannot be balanced"):
        ladder_costs(cfg.replace(points=("170m@20", "340m@20")))
    with pytest.raises(ConfigError, match=r"point tiny@5: profile joint:mode=block.*arch='titans' does not build"):
        ladder_costs(cfg.replace(arch="titans"))
