"""A ladder that varies one thing: a compute arm's points share depth and head size (refused in
one line before a ladder starts or is priced otherwise; a ladder saved before arms reports its
groups as separate arms), and a depth arm holds non-embedding parameters within 5 % while the
layers vary, its gain fitted against log2 layers with the same inference as the compute trend."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tlmsearch.cli import main
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.config import DEPTH_TOLERANCE, LadderConfig
from tlmsearch.ladders.gains import PairedGain, PointResult
from tlmsearch.ladders.plan import format_ladder_plan, plan_ladder
from tlmsearch.ladders.points import PointSize
from tlmsearch.ladders.report import tables
from tlmsearch.ladders.summary import summarize_ladder
from tlmsearch.ladders.trend import LadderPoint, Target, fit_trend
from tlmsearch.tuning.ladder import start_ladder

DEPTH = (
    "cpu-xs:n_layers=3,d_model=96,n_heads=6,base_width=240@20",
    "cpu-xs@20",
    "cpu-xs:n_layers=12,d_model=48,n_heads=3,base_width=128@20",
)
MIXED = ("tiny@5", "cpu-xs@20")  # 2 layers and 6 layers


def test_a_compute_ladder_of_mixed_depths_is_refused_before_it_starts_or_is_priced(tmp_path, capsys):
    cfg = LadderConfig(points=MIXED, runs_dir=str(tmp_path), name="mixed", lr_calibration="off")  # loads: old ladders
    words = r"points differ in depth or head size \(tiny@5: 2 layers, head size 16; cpu-xs@20: 6 layers, head size 16\)"
    with pytest.raises(ConfigError, match=words):
        plan_ladder(cfg)
    with pytest.raises(ConfigError, match="--arm depth"):
        start_ladder(cfg, progress=False)
    assert not (tmp_path / "mixed").exists()  # nothing created, nothing trained
    assert main(["ladder", "plan", "--points", *MIXED]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "share both" in err
    head = LadderConfig(points=("tiny@5", "tiny:d_model=64@5"), lr_calibration="off")  # head size 16 vs 32
    with pytest.raises(ConfigError, match="head size 16; tiny:d_model=64@5: 2 layers, head size 32"):
        head.check_arm()
    LadderConfig(points=("tiny@5", "tiny:d_model=64,n_heads=4@5"), lr_calibration="off").check_arm()  # one shape


def test_a_depth_arm_holds_parameters_and_is_priced():
    cfg = LadderConfig(arm="depth", points=DEPTH, seeds=4, lr_calibration="off")
    cfg.check_arm()
    p = plan_ladder(cfg)
    assert [q["n_layers"] for q in p["points"]] == [3, 6, 12] and p["arm"] == "depth"
    params = [q["non_embedding"] for q in p["points"]]
    assert params == [318_624, 320_320, 332_976] and max(params) / min(params) - 1 <= DEPTH_TOLERANCE
    text = format_ladder_plan(p)
    assert "a depth arm: 3 / 6 / 12 layers at 318,624-332,976 non-embedding parameters (4.5% apart)" in text
    compute = plan_ladder(LadderConfig(points=("tiny@5", "tiny@20"), seeds=4, lr_calibration="off"))
    assert "a compute arm at 2 layers, head size 16" in format_ladder_plan(compute)


@pytest.mark.parametrize(
    ("points", "words"),
    [
        (("cpu-xs:n_layers=3@20", "cpu-xs@20"), r"differ by 100.0% .*within 5%"),
        (("cpu-xs@20", "cpu-xs:d_model=64,base_width=208@20"), "at least 2 different depths"),
        ((DEPTH[0], "cpu-xs@5"), "the same tokens per parameter"),
    ],
)
def test_a_depth_arm_that_is_not_one_is_one_line(points, words):
    with pytest.raises(ConfigError, match=words):
        LadderConfig(arm="depth", points=points, lr_calibration="off")
    with pytest.raises(ConfigError, match="arm='width' is not allowed"):
        LadderConfig(arm="width", points=DEPTH, lr_calibration="off")


def test_depth_fit_is_the_line_against_log2_layers():
    """Against log2(layers): the slope per doubling of depth equals the fit of the same gains
    at compute 10**log2(layers) per decade (the same model on the same x), by construction."""
    layers, gains, ses = (3, 6, 12, 24), (0.01, 0.018, 0.022, 0.035), (0.003, 0.002, 0.002, 0.003)
    pts = [LadderPoint(point=f"l{n}", compute=1e12, gain=g, se=s, n=6, layers=n)
           for n, g, s in zip(layers, gains, ses, strict=True)]  # fmt: skip
    fit = fit_trend(pts, axis="depth", draws=500)
    same = [LadderPoint(point=f"l{n}", compute=10 ** math.log2(n), gain=g, se=s, n=6)
            for n, g, s in zip(layers, gains, ses, strict=True)]  # fmt: skip
    ref = fit_trend(same, draws=500)
    assert (fit.slope.estimate, fit.slope.low, fit.slope.high) == pytest.approx(
        (ref.slope.estimate, ref.slope.low, ref.slope.high), rel=1e-9
    )
    assert fit.p_value == ref.p_value and fit.span == pytest.approx(8.0)
    w = 1 / (np.square(ses) + fit.tau**2)  # the random-effects weights
    design = np.stack([np.ones(4), np.log2(layers)], 1)
    coef = np.linalg.solve(design.T @ (w[:, None] * design), design.T @ (w * np.array(gains)))
    assert fit.slope.estimate == pytest.approx(coef[1], rel=1e-9)
    assert "over 8x of depth" in fit.reach() and fit.unit == "nats per doubling of depth"
    with pytest.raises(ValueError, match="no compute target"):
        fit_trend(pts, axis="depth", target=Target("t", 1e20))
    with pytest.raises(ValueError, match="2 different depths"):
        fit_trend([LadderPoint(point=p.point, compute=p.compute, gain=p.gain, se=p.se, n=6, layers=4) for p in pts],
                  axis="depth")  # fmt: skip


def _row(name, layers, d_model, heads, compute, gain):
    size = PointSize(non_embedding=10**6, params_total=2 * 10**6, steps=100, tokens=10**6,
                     flops_per_token=compute / 1e6, n_layers=layers, d_model=d_model, n_heads=heads)  # fmt: skip
    gains = {"cosine": {"uniform": PairedGain(gain, 0.001, 6)}, "uniform": {"cosine": PairedGain(-gain, 0.001, 6)}}
    return (name, size, PointResult({"outcome": "better", "headline": "h"}, gains), 20.0)


CONFIG = {"name": "lad", "arch": "transformer", "alpha": 0.05, "margin": 0.01}


def test_points_of_different_depths_are_separate_arms_in_the_report():
    rows = [_row("a", 2, 64, 4, 1e12, 0.0), _row("b", 2, 128, 8, 1e13, 0.01), _row("c", 2, 256, 16, 1e14, 0.02),
            _row("d", 6, 64, 4, 1e13, 0.05), _row("e", 6, 128, 8, 1e14, 0.04)]  # fmt: skip
    s = summarize_ladder(CONFIG, rows, target=Target("440m", 1e20), texts={})
    t = s["trends"]["uniform"]["cosine"]
    assert t["n_points"] == 3 and t["arm"] == "2 layers, head size 16: a, b, c"
    assert [(a["shape"], a["points"]) for a in s["other_arms"]] == [("6 layers, head size 16", ["d", "e"])]
    assert s["other_arms"][0]["trends"]["uniform"]["cosine"]["n_points"] == 2
    assert any("differ in depth or head size" in n and "6 layers, head size 16: d, e" in n for n in s["notes"])
    points = tables(s)[0]
    assert points[1][:6] == ["point", "non-embedding params", "layers", "d_model", "heads", "tokens/param"]
    assert points[2][3][2:5] == ["6", "64", "4"]
    assert tables(s)[-1][0].startswith("Separate arm (6 layers, head size 16: d, e)")
    alone = summarize_ladder(CONFIG, [rows[0], rows[3]], target=Target("440m", 1e20), texts={})
    assert alone["conclusion"].startswith("cosine over uniform: no trend across compute (no two points share")


def test_a_depth_arm_summary_fits_against_layers():
    rows = [_row(f"l{n}", n, 64, 4, 1e13 * (1 + 0.01 * i), 0.01 * i) for i, n in enumerate((3, 6, 12, 24))]
    s = summarize_ladder({**CONFIG, "arm": "depth"}, rows, target=Target("440m", 1e20), texts={})
    t = s["trends"]["uniform"]["cosine"]
    assert t["axis"] == "depth" and "slope_per_decade" not in t and t["extrapolation"] is None
    assert t["slope"]["estimate"] == pytest.approx(0.01) and t["shown"]
    assert "nats per doubling of depth" in t["text"] and "the gain grows with depth" in t["text"]
    assert s["conclusion"].startswith("cosine over uniform against depth (log2 layers at equal parameters): ")
    assert "against log2(layers)" in tables(s)[2][0] and s["other_arms"] == []
