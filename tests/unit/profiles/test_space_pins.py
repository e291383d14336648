"""Pins of `profiles/spaces.py` worked out by hand or against Optuna itself: a space is frozen and
says -1 for a dimension it does not state; a user file's description is its docstring's first
line; a sample whose text does not parse back is refused; `check_sample` draws as Optuna's
RandomSampler of seed 0 and leaves Optuna's verbosity as it found it; long values are cut to 80
characters; `prior_fractions` counts shapes exactly and draws floats, ints and categories as a
random search of the same seed does."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import optuna
import pytest

from tlmsearch.errors import ConfigError
from tlmsearch.profiles import Budget, ProfileSpec
from tlmsearch.profiles.spaces import (
    SampleError,
    SearchSpace,
    check_sample,
    load_space,
    monotonicity,
    prior_fractions,
    sampled_text,
)

BUDGET = Budget(6, 96, multiple_of=8)


def _space(sample: Any) -> SearchSpace:
    return SearchSpace(name="t", description="a test space", sample=sample)


def test_a_space_is_frozen_and_unstated_dimensions_read_minus_one() -> None:
    space = _space(lambda trial, n: ProfileSpec())
    with pytest.raises(dataclasses.FrozenInstanceError):
        space.name = "other"  # type: ignore[misc]
    assert space.dimension(8) == -1
    assert dataclasses.replace(space, _dimension=lambda n: 2 * n).dimension(8) == 16


def test_a_user_files_description_is_its_docstrings_first_line(tmp_path: Path) -> None:
    path = tmp_path / "two_lines.py"
    path.write_text(
        '"""First line of the space.\n\nMore words below.\nAnd a last line."""\n'
        "from tlmsearch.profiles import ProfileSpec\n"
        "def sample(trial, n_layers):\n    return ProfileSpec()\n"
    )
    space = load_space(str(path))
    assert space.name == "two_lines"
    assert space.description == "First line of the space."


def test_a_sample_whose_text_does_not_parse_back_is_refused() -> None:
    def sample(trial: Any, n: int) -> ProfileSpec:
        spec = ProfileSpec()
        object.__setattr__(spec, "family", "nosuch")  # past the constructor's check
        return spec

    with pytest.raises(SampleError, match=r"search space t: sample\(\) returned 'nosuch', which is no profile"):
        sampled_text(_space(sample), None, 6)


def test_check_sample_draws_as_optunas_random_sampler_of_seed_0_and_restores_verbosity() -> None:
    drawn: list[float] = []

    def sample(trial: Any, n: int) -> ProfileSpec:
        drawn.append(trial.suggest_float("start", 0.2, 1.8))
        return ProfileSpec(family="cosine", params={"start": drawn[-1], "end": 0.5})

    optuna.logging.set_verbosity(optuna.logging.DEBUG)
    try:
        check_sample(_space(sample), [BUDGET])
        assert optuna.logging.get_verbosity() == optuna.logging.DEBUG
    finally:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
    expected = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0)).ask().suggest_float("start", 0.2, 1.8)
    assert drawn == [expected]


def test_a_long_returned_value_is_cut_to_80_characters() -> None:
    long = "x" * 100  # repr: 102 characters -> its first 77 (a quote and 76 x) and "..."
    with pytest.raises(SampleError) as info:
        sampled_text(_space(lambda trial, n: long), None, 6)
    assert f"returned '{'x' * 76}... (str)" in str(info.value)
    fits = "y" * 78  # repr: exactly 80 characters, shown whole
    with pytest.raises(SampleError) as info:
        sampled_text(_space(lambda trial, n: fits), None, 6)
    assert f"returned '{fits}' (str)" in str(info.value)


def test_prior_fractions_count_each_shape_exactly() -> None:
    # a space that ignores its trial: every draw is the paper's cosine, non-increasing
    cosine = _space(lambda trial, n: ProfileSpec(family="cosine", params={"start": 1.5, "end": 0.5}))
    assert prior_fractions(cosine, BUDGET, n=3) == {
        "non-increasing": 1.0,
        "non-decreasing": 0.0,
        "non-monotone": 0.0,
        "constant": 0.0,
    }
    with pytest.raises(ConfigError, match="prior_fractions: n=0 must be >= 1"):
        prior_fractions(cosine, BUDGET, n=0)


def _three_kinds(trial: Any, n: int) -> ProfileSpec:
    family = trial.suggest_categorical("family", ["cosine", "linear", "uniform"])
    if family == "uniform":
        return ProfileSpec()
    start = trial.suggest_float("start", 0.2, 1.8)
    end = trial.suggest_int("end_tenths", 2, 18) / 10
    return ProfileSpec(family=family, params={"start": start, "end": end})


def test_prior_fractions_draw_as_a_random_search_of_the_same_seed() -> None:
    # the same sampler seed through a real study: the same draws, so the same counts exactly
    # (float and int drawn on a linear scale, categories from the tuple given)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=4))
    counts = dict.fromkeys(("non-increasing", "non-decreasing", "non-monotone", "constant"), 0)
    for _ in range(40):
        trial = study.ask()
        counts[monotonicity(_three_kinds(trial, BUDGET.n_layers).widths(BUDGET))] += 1
        study.tell(trial, 0.0)
    assert counts["constant"] > 0 and counts["non-increasing"] > 0 and counts["non-decreasing"] > 0
    assert prior_fractions(_space(_three_kinds), BUDGET, n=40, seed=4) == {k: v / 40 for k, v in counts.items()}
