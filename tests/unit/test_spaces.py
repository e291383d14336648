"""Built-in and user search spaces: sampling, dimensions, exact encoding of baselines."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from tlmsearch.errors import ConfigError
from tlmsearch.profiles import Budget, ProfileSpec
from tlmsearch.profiles.spaces import builtin_spaces, load_space

optuna.logging.set_verbosity(optuna.logging.WARNING)
BUDGET = Budget(12, 512, multiple_of=32)
CANNOT_EXPRESS = {
    ("cosine", "linear:start=1.5,end=0.5"),
    ("joint", "linear:start=1.5,end=0.5"),  # its MLP axis is a cosine, as the cosine space
    ("joint_flops", "linear:start=1.5,end=0.5"),  # the joint space at equal FLOPs: the same MLP axis
    ("knots", "cosine:start=1.5,end=0.5"),
    ("knots", "cosine:start=0.5,end=1.5"),
    ("monotone", "cosine:start=1.5,end=0.5"),  # a 5-knot cubic only approximates a cosine
    ("monotone", "cosine:start=0.5,end=1.5"),
    ("monotone", "linear:start=0.5,end=1.5"),
}
BASELINES = ["uniform", "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5", "cosine:start=0.5,end=1.5"]


def test_the_required_spaces_exist() -> None:
    assert {"cosine", "families", "monotone", "knots", "free"} <= set(builtin_spaces())


@pytest.mark.parametrize("name", builtin_spaces())
def test_space_samples_on_budget_profiles(name: str) -> None:
    space = load_space(name)
    assert space.name == name and space.description
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    seen = set()
    for _ in range(12):
        trial = study.ask()
        spec = space.sample(trial, BUDGET.n_layers)
        widths = spec.widths(BUDGET)
        assert sum(widths) == BUDGET.total
        seen.add(widths)
        assert len(trial.params) <= max(space.dimension(BUDGET.n_layers), 1)
        study.tell(trial, 0.0)
    assert len(seen) > 1  # the space really varies the profile


@pytest.mark.parametrize("name", builtin_spaces())
@pytest.mark.parametrize("baseline", BASELINES)
def test_encode_reproduces_the_baseline_exactly(name: str, baseline: str) -> None:
    space = load_space(name)
    spec = ProfileSpec.parse(baseline)
    params = space.encode(spec, BUDGET.n_layers)
    if params is None:  # only where a space's shapes truly exclude the baseline
        assert (name, baseline) in CANNOT_EXPRESS
        return
    again = space.sample(optuna.trial.FixedTrial(params), BUDGET.n_layers)
    assert again.widths(BUDGET) == spec.widths(BUDGET)


def test_monotone_space_only_tapers() -> None:
    space = load_space("monotone")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(20):
        widths = space.sample(study.ask(), 16).widths(Budget(16, 256, multiple_of=8))
        assert all(b <= a for a, b in zip(widths, widths[1:], strict=False))


def test_user_space_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.py"
    path.write_text(
        "from tlmsearch.profiles import ProfileSpec\n"
        "DESCRIPTION = 'linear tapers'\n"
        "def sample(trial, n_layers):\n"
        "    s = trial.suggest_float('s', 1.0, 1.9)\n"
        "    return ProfileSpec(family='linear', params={'start': s, 'end': 2 - s})\n"
    )
    space = load_space(str(path))
    assert space.name == "mine" and space.description == "linear tapers"
    spec = space.sample(optuna.trial.FixedTrial({"s": 1.5}), 12)
    assert spec.widths(BUDGET) == ProfileSpec.parse("linear:start=1.5,end=0.5").widths(BUDGET)
    assert space.encode(spec, 12) is None


def test_bad_spaces(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown search space 'nope'; choose one of: "):
        load_space("nope")
    with pytest.raises(ConfigError, match="does not exist"):
        load_space(str(tmp_path / "missing.py"))
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ConfigError, match="failed to import: RuntimeError: boom"):
        load_space(str(broken))
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(ConfigError, match="defines no function sample"):
        load_space(str(empty))
