"""Each profile family owns the checks of its parameter ranges (`Family.check`): every range
error is one line naming the family, raised when a profile is parsed, and the shared code that
resolves parameters (`resolve_params`) names no family."""

from __future__ import annotations

import ast
import inspect

import pytest

from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec, families
from tlmsearch.profiles.families import FAMILIES

# (profile text, the start of the message): at least one out-of-range value of every family that has a range
RANGE_ERRORS = [
    ("cosine:start=0", "cosine: start=0.0 must be > 0 (relative width)"),
    ("cosine:end=-1", "cosine: end=-1.0 must be > 0"),
    ("linear:start=-0.5", "linear: start=-0.5 must be > 0"),
    ("sigmoid:end=0", "sigmoid: end=0.0 must be > 0"),
    ("sigmoid:steepness=0", "sigmoid: steepness=0.0 must be > 0"),
    ("sigmoid:midpoint=1.5", "sigmoid: midpoint=1.5 must lie in [0, 1]"),
    ("sigmoid:midpoint=-0.5", "sigmoid: midpoint=-0.5 must lie in [0, 1]"),
    ("groups:factor=0", "groups: factor=0.0 must be > 0"),
    ("openelm:start=0", "openelm: start=0.0 must be > 0"),
    ("reverse:end=0", "reverse: end=0.0 must be > 0"),
    ("reverse:start=1,end=2", "reverse: start=1.0 must be > end=2.0"),
    ("frame:start=0", "frame: start=0.0 must be > 0"),
    ("frame:frame=0", "frame: frame=0.0 must be > 0"),
    ("crown:end=0", "crown: end=0.0 must be > 0"),
    ("crown:peak=0.4", "crown: peak=0.4 must be > max(start, end)"),
    ("middle:fraction=0", "middle: fraction=0.0 must lie in (0, 1]"),
    ("middle:ends=1", "middle: ends=1.0 must lie in [0, 1)"),
    ("knots", "knots: needs knot values k0, k1, ..."),
    ("knots:k0=1,k2=1", "knots: knot names must be k0..k{K-1} without gaps"),
    ("knots:k0=1,k1=0", "knots: knot values must be > 0"),
    ("bump:width=0", "bump: width=0.0 must be > 0"),
    ("bump:amplitude=-1", "bump: amplitude=-1.0 must be > -1"),
    ("bowtie:ratio=0", "bowtie: ratio=0.0 must lie in (0, 1]"),
    ("bowtie:position=1", "bowtie: position=1.0 must lie in (0, 1)"),
    ("joint:start=0", "joint: start=0.0 must be > 0"),
    ("joint:mode=attention,heads_start=5", "joint: heads_start=5.0 must lie in (0, 4]"),
]


@pytest.mark.parametrize(("text", "message"), RANGE_ERRORS, ids=[t for t, _ in RANGE_ERRORS])
def test_each_range_error_names_its_family(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        ProfileSpec.parse(text)
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)


def test_every_family_with_a_check_is_exercised() -> None:
    """A family given a check later gets a row above."""
    tested = {text.partition(":")[0] for text, _ in RANGE_ERRORS}
    assert {name for name, fam in FAMILIES.items() if fam.check is not None} <= tested


@pytest.mark.parametrize("name", list(FAMILIES))
def test_defaults_pass_their_familys_check(name: str) -> None:
    fam = FAMILIES[name]
    if fam.check is not None and not fam.indexed:
        fam.check({k: v if isinstance(v, str) else float(v) for k, v in fam.defaults.items()})


def test_resolve_params_names_no_family() -> None:
    """The shared path compares no family name: what a family allows sits in its own row."""
    tree = ast.parse(inspect.getsource(families.resolve_params))
    names = set(FAMILIES)
    literals = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not literals & names
