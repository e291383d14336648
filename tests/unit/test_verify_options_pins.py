"""Pins of `configs/verify.py`: a step count of 0 refused, the rate check's paired seeds up to the
seed limit (and not one more), and a group-sequential design built directly (not through `of`)
checked, frozen and built by keyword like one built from options."""

from __future__ import annotations

import dataclasses

import pytest

from tlmsearch.configs.verify import SequentialOptions, VerifyOptions, check_rate_check
from tlmsearch.core.validate import MAX_SEEDS
from tlmsearch.errors import ConfigError


def test_a_verification_of_zero_steps_is_refused() -> None:
    with pytest.raises(ConfigError, match="steps"):
        VerifyOptions.of(steps=0)
    assert VerifyOptions.of(steps=1).steps == 1


def test_the_rate_checks_seeds_reach_the_seed_limit() -> None:
    assert MAX_SEEDS == 1000
    assert check_rate_check(MAX_SEEDS) == MAX_SEEDS and check_rate_check(2) == 2
    for bad in (MAX_SEEDS + 1, 1):
        with pytest.raises(ConfigError, match=f"rate_check={bad} is not allowed"):
            check_rate_check(bad)


def _design(**change: object) -> SequentialOptions:
    fields = dict(
        first=(1, 2, 3), n_seeds=None, looks=3, spending="obf", margin=0.01, alpha=0.05, power=0.8,
        max_seeds=12, method="t", arch="transformer",
    )  # fmt: skip
    return SequentialOptions(**{**fields, **change})  # type: ignore[arg-type]


def test_a_design_built_directly_is_checked_and_frozen() -> None:
    design = _design()
    with pytest.raises(dataclasses.FrozenInstanceError):
        design.looks = 4  # type: ignore[misc]
    with pytest.raises(TypeError):  # keywords only: ten fields of like types are not read by position
        SequentialOptions((1, 2, 3), None, 3, "obf", 0.01, 0.05, 0.8, 12, "t", "transformer")  # type: ignore[misc]
    with pytest.raises(ConfigError, match="max_seeds"):
        _design(max_seeds=0)
    with pytest.raises(ConfigError, match="looks"):
        _design(looks=1)
    with pytest.raises(ConfigError, match="spending"):
        _design(spending="linear")
