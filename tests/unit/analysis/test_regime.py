"""The regime a result was taken in: each record's figures, and the verdict headline that states them.

Fake verify records (tests/helpers/analysis_fakes.py) given the regime metrics the trainer
reports (tokens_per_param, epochs, val_tokens, params_non_embedding): the headline must say
"early training" below 5 tokens per parameter, "screening regime" from 5 to 20 and neither at 30.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from analysis_fakes import verify_records

from tlmsearch.analysis.regime import (
    DECIDE_TOKENS_PER_PARAM,
    SCREEN_TOKENS_PER_PARAM,
    record_values,
    regime_name,
    regime_of,
)
from tlmsearch.analysis.summary import summarize, verdicts
from tlmsearch.rundir.records import TrialRecord

NON_EMBEDDING = 430_000


def with_regime(records: list[dict[str, Any]], tpp: float, epochs: float = 0.5) -> list[dict[str, Any]]:
    """`records` as the trainer now leaves them: final metrics carry the regime."""
    out = []
    for r in records:
        metrics = {
            **r["metrics"],
            "tokens": tpp * NON_EMBEDDING,
            "tokens_per_param": tpp,
            "epochs": epochs,
            "val_tokens": 4096.0,
            "params_non_embedding": float(NON_EMBEDDING),
        }
        out.append({**r, "metrics": metrics, "train": {"lr": 0.002, "steps": r["max_steps"]}})
    return out


def test_the_thresholds_are_the_fields() -> None:
    assert (DECIDE_TOKENS_PER_PARAM, SCREEN_TOKENS_PER_PARAM) == (20.0, 5.0)
    assert [regime_name(x) for x in (0.5, 4.99, 5.0, 19.9, 20.0, 77.0)] == [
        "early training", "early training", "screening", "screening", "decision", "decision",
    ]  # fmt: skip
    assert regime_name(math.nan) == "unknown"


@pytest.mark.parametrize(
    ("tpp", "shown", "said", "not_said"),
    [
        (
            1.0,
            "1.0",
            "- early training, below 5 tokens per parameter: this is about early training",
            "screening regime",
        ),
        (10.0, "10", "- screening regime, 5-20 tokens per parameter: a screen, not a decision", "early training"),
        (30.0, "30", "- at or above 20 tokens per parameter, where the field decides", "early training"),
    ],
)
def test_the_headline_states_the_regime(tpp: float, shown: str, said: str, not_said: str) -> None:
    (v,) = verdicts(with_regime(verify_records(), tpp), kinds=("verify",))
    regime = v.headline.split("; regime: ", 1)[1]
    # the depth and its degrees of freedom first: 4 layers of one fixed MLP total leave 3 free widths
    depth = "4 layers: 3 free MLP widths; "
    assert regime.startswith(f"{depth}0.43M non-embedding parameters, {shown} tokens per parameter, 0.5 epochs")
    assert "4,096 validation tokens, lr 0.002" in regime
    assert said in regime and not_said not in v.headline
    assert "screening regime" not in v.headline or tpp < 20
    d = v.to_dict()["regime"]
    assert d["tokens_per_param"] == [tpp, tpp] and d["name"] == regime_name(tpp) and d["text"] in v.headline


def test_only_the_deciding_seeds_set_the_regime() -> None:
    records = with_regime(verify_records(seeds=4), 30.0)
    for r in records:  # seed 3 ran shorter (it does not decide below)
        if r["seed"] == 3:
            r["metrics"]["tokens_per_param"] = 2.0
    (v,) = verdicts(records, kinds=("verify",), seeds=[0, 1, 2])
    assert v.regime is not None and v.regime.tokens_per_param == (30.0, 30.0) and not v.regime.early
    (both,) = verdicts(records, kinds=("verify",))
    assert both.regime is not None and both.regime.name == "early training"  # the shortest bounds the claim
    assert "2.0-30 tokens per parameter" in both.headline


def test_records_written_before_the_regime_metrics_are_read_back() -> None:
    old = with_regime(verify_records(), 1.0)[0]
    metrics = {k: v for k, v in old["metrics"].items() if k not in ("tokens_per_param", "epochs", "val_tokens")}
    old = {**old, "metrics": {**metrics, "tokens": 2.0 * NON_EMBEDDING}}
    old["train"] = {"eval_windows": 32, "lr": 0.002}
    old["model"] = {"seq_len": 128}
    values = record_values(TrialRecord.from_dict(old))
    assert values["tokens_per_param"] == 2.0  # tokens / non-embedding parameters
    assert values["val_tokens"] == 32 * 128  # every evaluation used eval_windows windows then
    assert math.isnan(values["epochs"])  # the corpus size is not in the record
    # a record with no figure at all still gives a headline, which says the regime is unknown
    bare = verify_records()
    (v,) = verdicts(bare, kinds=("verify",))
    assert "; regime: 4 layers: 3 free MLP widths; tokens per parameter unknown" in v.headline


def test_records_and_summaries_carry_tokens_per_param_and_epochs() -> None:
    records = with_regime(verify_records(), 10.0, epochs=0.25)
    r = TrialRecord.from_dict(records[0])
    assert (r.metric("tokens_per_param"), r.metric("epochs"), r.metric("val_tokens")) == (10.0, 0.25, 4096.0)
    search = [
        {**x, "trial_id": f"s{i}", "kind": "baseline" if x["baseline"] else "sampled"} for i, x in enumerate(records)
    ]
    s = summarize([*search, *records], {"arch": "transformer"})
    assert s["best"][0]["tokens_per_param"] == 10.0 and s["best"][0]["epochs"] == 0.25
    assert s["regime"]["search"]["name"] == "screening" and s["regime"]["evaluation"]["epochs"] == [0.25, 0.25]
    assert s["verdicts"][0]["regime"]["name"] == "screening"
    assert regime_of([]) is None
