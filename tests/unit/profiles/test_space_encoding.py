"""Exact baseline encodings at every preset, the `taper` space, and prior fractions."""

from __future__ import annotations

import optuna
import pytest

from tlmsearch.configs.presets import PRESETS
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import Budget, ProfileSpec, shape_stats
from tlmsearch.profiles.spaces import builtin_spaces, load_space, monotonicity, prior_fractions

optuna.logging.set_verbosity(optuna.logging.WARNING)
DEFAULT_BASELINES = ["uniform", "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5", "cosine:start=0.5,end=1.5"]
# the paper's controlled experiment and non-monotone references the default space also holds
EXTRA = [
    "groups:early",
    "groups:middle",
    "groups:late,factor=1.5",
    "bump:centre=0.5,width=0.2,amplitude=-0.5",  # hourglass
    "bump:centre=0.5,width=0.25,amplitude=0.5",  # middle-heavy
]
# `free` writes its logits into the profile text; the text keeps every digit the short form
# would lose (ProfileSpec's `_fmt`), so the baselines' rounding ties survive the round trip


def _sampled(space_name: str, spec: ProfileSpec, n_layers: int) -> ProfileSpec | None:
    space = load_space(space_name)
    point = space.encode(spec, n_layers)
    return None if point is None else space.sample(optuna.trial.FixedTrial(point), n_layers)


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("text", DEFAULT_BASELINES + EXTRA)
def test_taper_space_encodes_every_baseline_exactly(preset: str, text: str) -> None:
    budget = PRESETS[preset].budget()
    spec = ProfileSpec.parse(text)
    again = _sampled("taper", spec, budget.n_layers)
    assert again is not None, f"taper cannot express {text}"
    assert again.widths(budget) == spec.widths(budget)
    # what a search trains: the sample's text form, parsed again
    assert ProfileSpec.parse(str(again)).widths(budget) == spec.widths(budget)


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("text", DEFAULT_BASELINES)
@pytest.mark.parametrize("name", builtin_spaces())
def test_every_space_encodes_default_baselines_exactly_at_every_preset(name: str, text: str, preset: str) -> None:
    budget = PRESETS[preset].budget()
    spec = ProfileSpec.parse(text)
    again = _sampled(name, spec, budget.n_layers)
    if again is None:
        return  # test_spaces.py checks which spaces may decline which baselines
    assert again.widths(budget) == spec.widths(budget)


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("text", DEFAULT_BASELINES)
def test_free_space_baselines_survive_the_text_form(text: str, preset: str) -> None:
    budget = PRESETS[preset].budget()
    spec = ProfileSpec.parse(text)
    again = _sampled("free", spec, budget.n_layers)
    assert again is not None
    assert ProfileSpec.parse(str(again)).widths(budget) == spec.widths(budget)


def test_taper_space_declines_what_it_cannot_hold() -> None:
    space = load_space("taper")
    assert space.encode(ProfileSpec.parse("cosine:start=1.95,end=0.05"), 8) is None  # stronger than 0.2..1.8
    assert space.encode(ProfileSpec.parse("groups:early,factor=0.5"), 8) is None
    assert space.encode(ProfileSpec.parse("bump:amplitude=1.5"), 8) is None
    assert space.encode(ProfileSpec.parse("power:exponent=0.5"), 8) is None


def test_taper_space_composes_a_bump_onto_a_taper() -> None:
    point = {"taper": "cosine", "start": 1.5, "deviation": "bump", "bump_centre": 0.5, "bump_width": 0.15}
    budget = Budget(16, 512, multiple_of=8)
    dip = load_space("taper").sample(optuna.trial.FixedTrial({**point, "bump_amplitude": -0.6}), 16)
    widths = dip.widths(budget)
    assert sum(widths) == budget.total
    assert monotonicity(widths) == "non-monotone"  # the dip in the middle rises again after it
    assert widths[0] > widths[-1]  # still a taper overall
    assert shape_stats(widths).spearman < -0.5


def test_monotonicity_classes() -> None:
    assert monotonicity([3, 2, 2, 1]) == "non-increasing"
    assert monotonicity([1, 2, 2, 3]) == "non-decreasing"
    assert monotonicity([2, 2, 2]) == "constant"
    assert monotonicity([1, 3, 2]) == "non-monotone"


@pytest.mark.slow
def test_prior_fractions_match_known_shapes_and_optunas_random_search() -> None:
    budget = PRESETS["cpu-s"].budget()
    mono = prior_fractions(load_space("monotone"), budget, n=200)
    assert mono["non-increasing"] + mono["constant"] == 1.0
    cosine = prior_fractions(load_space("cosine"), budget, n=400)
    assert cosine["non-monotone"] == 0.0
    assert 0.4 < cosine["non-increasing"] < 0.6  # start is uniform on [0.2, 1.8]: half narrow
    taper = prior_fractions(load_space("taper"), budget, n=600, seed=1)
    assert abs(sum(taper.values()) - 1.0) < 1e-12
    assert taper["non-increasing"] > 0.2 and taper["non-decreasing"] > 0.2 and taper["non-monotone"] > 0.2
    # the same draws through a real study with Optuna's RandomSampler give the same fractions
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=2))
    counts = {"non-increasing": 0, "non-decreasing": 0, "non-monotone": 0, "constant": 0}
    for _ in range(600):
        trial = study.ask()
        counts[monotonicity(load_space("taper").sample(trial, budget.n_layers).widths(budget))] += 1
        study.tell(trial, 0.0)
    for key, count in counts.items():  # two independent samples of 600: within ~4.5 standard errors
        assert abs(count / 600 - taper[key]) < 0.12, key
    with pytest.raises(ConfigError, match="n=0 must be >= 1"):
        prior_fractions(load_space("taper"), budget, n=0)


def test_prior_fractions_are_reproducible_from_the_seed() -> None:
    budget = PRESETS["cpu-s"].budget()
    space = load_space("knots")
    assert prior_fractions(space, budget, n=100, seed=3) == prior_fractions(space, budget, n=100, seed=3)
