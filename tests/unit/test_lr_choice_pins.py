"""Pins of `configs/lr_choice.py` and its settings (`configs/lr_calibration.py`) worked out by
hand: how a calibration of one and of two seeds reads (its loss texts, its tag, its seeds, its
statistic, its interval's words), a calibration no rate of which is usable, one built without
failure reasons, a grid already longer than the widening limit allows (it warns at its edge
rather than widening), and the limits of a configured grid and of its seeds."""

from __future__ import annotations

import math

import pytest

from tlmsearch.configs.lr_calibration import MAX_RATES, check_seeds, parse_setting
from tlmsearch.configs.lr_choice import LrCalibration, calibrate
from tlmsearch.errors import ConfigError

RATES = (0.001, 0.002, 0.004)


def _two_seeds() -> LrCalibration:
    # means 2.1, 1.65, 1.9: the best is 0.002; the parabola through the three (log2 rates one
    # apart) has its vertex 0.5 (2.1 - 1.9) / (2.1 - 3.3 + 1.9) = 1/7 of a step above it:
    # 0.002 x 2^(1/7) = 0.0022082, 0.00221 to three digits.
    return LrCalibration(
        rates=RATES,
        seeds=(1, 2),
        losses=((2.0, 2.2), (1.5, 1.8), (1.8, 2.0)),
        trained=((True, True),) * 3,
        configured=0.003,
        steps=100,
    )


def _one_seed() -> LrCalibration:
    return LrCalibration(
        rates=RATES,
        seeds=(7,),
        losses=((2.0,), (1.5,), (1.8,)),
        trained=((True,),) * 3,
        configured=0.003,
        steps=100,
    )


def test_two_seeds_read_as_a_mean_and_sd_with_the_best_tagged() -> None:
    cal = _two_seeds()
    assert cal.chosen == 0.00221
    # sd of (2.0, 2.2) = sqrt(0.02) = 0.1414; of (1.5, 1.8) = sqrt(0.045) = 0.2121
    assert cal.loss_texts() == [
        "0.001: 2.1000 +- 0.1414",
        "0.002 (best): 1.6500 +- 0.2121",
        "0.004: 1.9000 +- 0.1414",
    ]
    assert cal.seeds_text() == "2 paired seeds 1-2"
    text = cal.interval_text()
    # (3 - 1) x (2 - 1) = 2 residual degrees of freedom
    assert text.startswith("95% interval ") and text.endswith("(bootstrap, 2 seeds, 2 df)"), text
    assert cal.interval is not None
    line = cal.describe()
    assert line.startswith(
        "learning-rate calibration (uniform, 100 steps, 2 paired seeds 1-2; mean val_loss +- sd over seeds by rate): "
    ), line
    assert "chosen 0.00221 (95% interval " in line
    assert line.endswith(", parabola in log2 rate through the best mean and its neighbours; configured 0.003)")


def test_one_seed_reads_as_plain_losses_with_the_chosen_tagged() -> None:
    cal = _one_seed()
    assert cal.chosen == 0.002  # one seed: the best rate itself, no parabola
    assert cal.interval is None
    assert cal.loss_texts() == ["0.001: 2.0000", "0.002 (chosen): 1.5000", "0.004: 1.8000"]
    assert cal.seeds_text() == "seed 7"
    assert cal.interval_text() == "no interval: one seed per rate"
    assert cal.describe() == (
        "learning-rate calibration (uniform, 100 steps, seed 7; val_loss by rate): "
        "0.001: 2.0000, 0.002 (chosen): 1.5000, 0.004: 1.8000; "
        "chosen 0.002 (no interval: one seed per rate; configured 0.003)"
    )
    assert cal.to_dict()["interval"] is None


def test_no_usable_rate_keeps_the_configured_one() -> None:
    cal = LrCalibration(
        rates=RATES,
        seeds=(1,),
        losses=((math.nan,), (math.inf,), (math.nan,)),
        trained=((True,),) * 3,
        configured=0.003,
        steps=100,
        reasons=(("diverged at step 3",), (None,), ("failed: boom",)),
    )
    assert cal.chosen is None and cal.rate == 0.003
    assert cal.loss_texts() == ["0.001: diverged", "0.002: failed", "0.004: failed"]
    assert cal.describe().endswith("; no rate usable, keeping 0.003")


def test_a_calibration_without_reasons_reads_failures_as_failed() -> None:
    # `reasons` defaults to (): every rate reads its reasons as none rather than indexing past them
    cal = LrCalibration(
        rates=RATES,
        seeds=(1,),
        losses=((2.0,), (math.nan,), (1.8,)),
        trained=((True,),) * 3,
        configured=0.003,
        steps=100,
    )
    assert cal.loss_texts() == ["0.001: 2.0000", "0.002: failed", "0.004 (chosen): 1.8000"]


def test_a_grid_longer_than_the_limit_warns_at_its_edge_instead_of_widening() -> None:
    # MAX_RATES + 1 configured rates, the best at the highest: no room to widen (0 left, not
    # negative), so the calibration warns that a higher rate may be better
    rates = tuple(0.0001 * 2**i for i in range(MAX_RATES + 1))
    losses = {r: 3.0 - i * 0.01 for i, r in enumerate(rates)}
    cal = calibrate(rates, (1,), lambda rate, seed: (True, losses[rate], None), configured=0.001, steps=10)
    assert cal.rates == rates and cal.added == ()
    assert cal.widen_left == 0 and cal.edge == "highest" and cal.widening is None
    (warning,) = cal.warnings()
    assert "is the highest of the grid" in warning and "a higher rate may be better" in warning


def test_an_unfinished_calibration_of_two_seeds_has_no_interval_yet() -> None:
    # two rates trained, the third pending: the bootstrap over the runs so far would give an
    # interval ((0.001, 0.002) here), but nothing is chosen until every rate is trained
    cal = LrCalibration(
        rates=RATES,
        seeds=(1, 2),
        losses=((2.0, 2.2), (1.5, 1.8), (math.nan, math.nan)),
        trained=((True, True), (True, True), (False, False)),
        configured=0.003,
        steps=100,
    )
    assert cal.chosen is None and cal.interval is None
    assert cal.to_dict()["interval"] is None
    assert cal.describe().endswith("; 4 of 6 runs trained so far")


def test_a_grid_of_16_rates_is_the_most_and_every_rate_must_be_positive() -> None:
    rates16 = ",".join(f"{0.0001 * (i + 1):g}" for i in range(16))
    assert len(parse_setting(rates16).split(",")) == 16
    with pytest.raises(ConfigError, match="names 17 rates; at most 16"):
        parse_setting(rates16 + ",0.1")
    with pytest.raises(ConfigError, match="every rate must be positive and finite"):
        parse_setting("0,1e-3,2e-3,4e-3")


@pytest.mark.parametrize("seeds", [0, 17, -1, True, 2.5, "3"])
def test_calibration_seeds_outside_1_to_16_are_refused(seeds: object) -> None:
    with pytest.raises(ConfigError, match=r"lr_calibration_seeds=.* must be an integer from 1 to 16"):
        check_seeds(seeds)  # type: ignore[arg-type]


def test_calibration_seeds_from_1_to_16_pass() -> None:
    for seeds in (1, 3, 16):
        check_seeds(seeds)
