"""Pins of `analysis/regime.py` worked out by hand: the SI cut-offs of the parameter count (0.1 of
a unit and up takes it), tokens per parameter recomputed for a record that predates the metric,
the search space and its degrees of freedom in a regime's dict, and a regime being frozen."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from analysis_fakes import verify_records

from tlmsearch.analysis.regime import _si, record_values, regime_of


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (1e8, "0.1G"),  # 0.1 of a unit is enough for it
        (99_999_999.95, "100M"),  # just below: the next unit down, rounded
        (1e5, "0.1M"),
        (99_999.95, "100K"),
        (100.0, "0.1K"),
        (99.95, "100"),  # below 0.1K: no unit, three digits
        (430_000.0, "0.43M"),
        (26_896.0, "26.9K"),
        (2.5e9, "2.5G"),
    ],
)
def test_si_cut_offs(x: float, text: str) -> None:
    assert _si(x) == text


def test_tokens_per_parameter_of_an_older_record() -> None:
    # no tokens_per_param metric: tokens over non-embedding parameters, down to a count of 1
    for params, tokens, want in ((400.0, 8000.0, 20.0), (1.0, 50.0, 50.0)):
        (record,) = verify_records(seeds=1)[:1]
        record["metrics"] = {**record["metrics"], "tokens": tokens, "params_non_embedding": params}
        assert record_values(record)["tokens_per_param"] == want
    record["metrics"] = {**record["metrics"], "params_non_embedding": 0.0}
    assert math.isnan(record_values(record)["tokens_per_param"])  # no parameters: unknown, not inf


def _regime(space: Any) -> Any:
    records = verify_records(seeds=1)
    for r in records:
        r["metrics"] = {**r["metrics"], "tokens_per_param": 30.0, "params_non_embedding": 430_000.0}
    return regime_of(records, space=space)


def test_the_space_and_its_degrees_of_freedom() -> None:
    knots = _regime("knots")  # 4 layers: 3 free widths, the knots space 3 of them
    assert knots.space == "knots" and knots.n_layers == 4
    d = knots.to_dict()
    assert (d["dof"], d["free_widths"]) == (3, 3)
    assert knots.figures().startswith("4 layers: 3 free MLP widths, the knots space 3 degrees of freedom; 0.43M")
    plain = _regime("")  # no space: None, and no degrees of freedom of one
    assert plain.space is None and plain.to_dict()["dof"] is None and plain.to_dict()["free_widths"] == 3
    assert dataclasses.replace(knots, n_layers=None).to_dict()["dof"] is None


def test_a_regime_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        _regime(None).n_records = 3  # type: ignore[misc]
