"""Pins of a candidate's identity (`configs/identity.py`): one profile in two spellings is one
name, which candidates count as collapsed, that `aliases` answers with a bool, and that a
candidate is frozen."""

from __future__ import annotations

import dataclasses

import pytest

from tlmsearch.configs.identity import Candidate, aliases, candidates, check_distinct_shapes, collapsed
from tlmsearch.configs.search import SearchConfig
from tlmsearch.errors import ConfigError

COSINE, LINEAR = "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5"


def _cfg(n_layers: int) -> SearchConfig:
    return SearchConfig(preset="tiny", model={"n_layers": n_layers})


def test_two_spellings_of_one_profile_are_one_name() -> None:
    # "cosine" is the paper's cosine 1.5 -> 0.5: the first spelling given is kept, the second dropped
    (only,) = candidates(_cfg(4), ["cosine", COSINE, "cosine:end=0.5"])
    assert only.names == ("cosine",) and only.widths == (96, 80, 48, 32)


def test_collapsed_means_more_than_one_name() -> None:
    a, b = Candidate(("uniform",), ((64, 64),)), Candidate((COSINE, LINEAR), ((96, 32),))
    assert collapsed([a, b]) == [b]
    assert collapsed([a]) == []


def test_aliases_is_a_bool_either_way() -> None:
    (merged,) = candidates(_cfg(2), [COSINE, LINEAR])  # one model at 2 layers, two at 16
    assert aliases(_cfg(2), merged) is False
    (joint,) = candidates(_cfg(2), [COSINE, "joint:mode=mlp,start=1.5,end=0.5"])  # cosine by definition
    assert aliases(_cfg(2), joint) is True
    # a name that does not build at 16 layers is no alias: free logits for 2 layers build cosine's 96, 32
    (stuck,) = candidates(_cfg(2), [COSINE, "free:l0=0.5,l1=-0.5"])
    assert stuck.names == (COSINE, "free:l0=0.5,l1=-0.5")
    assert aliases(_cfg(2), stuck) is False


def test_a_candidate_is_frozen() -> None:
    c = Candidate(("uniform",), ((64, 64),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.names = ("cosine",)  # type: ignore[misc]


def test_the_default_power_and_reverse_tapers_are_one_model_at_eight_tiny_layers() -> None:
    # found by building 19 library profiles at 2-24 layers: only at 8 do these two coincide
    assert [c.names for c in candidates(_cfg(8), ["power", "reverse"])] == [("power", "reverse")]
    assert len(candidates(_cfg(4), ["power", "reverse"])) == len(candidates(_cfg(16), ["power", "reverse"])) == 2
    with pytest.raises(ConfigError, match=r"^study: power and reverse are \[112, 96, 88, 72, 56, 40, 32, 16\], one"):
        check_distinct_shapes(_cfg(8), ["power", "reverse"], what="study")
