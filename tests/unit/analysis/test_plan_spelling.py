"""verify's plan (`analysis.plan.plan`) reuses a model recorded under another spelling of its
profile, and a recorded profile whose model can no longer be built is reused by its text only."""

from __future__ import annotations

from typing import Any

from analysis_fakes import record, search_records

from tlmsearch.analysis.plan import plan
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.records import TrialRecord

RECORDED = "linear:start=1.2,end=0.8"
OTHER = "linear:end=0.8,start=1.2"


def key_of(profile: dict[str, Any], base: int) -> str:
    """A stand-in for the model key: the canonical text; a family named 'gone' builds nothing."""
    if profile.get("family") == "gone":
        raise ConfigError("unknown profile family 'gone'")
    return str(ProfileSpec.from_dict(dict(profile)).resolved())


def records() -> list[TrialRecord]:
    out = [TrialRecord.from_dict(r) for r in search_records()]
    for seed in (1, 2):
        out.append(TrialRecord.from_dict(record(f"v{seed}", RECORDED, 2.3, kind="verify", seed=seed)))
        gone = record(f"g{seed}", "uniform", 2.4, kind="verify", seed=seed)
        gone["profile"] = {"family": "gone", "params": {}}
        out.append(TrialRecord.from_dict(gone))
    return out


def test_another_spelling_is_the_recorded_candidate() -> None:
    planned = plan(records(), 1, [1, 2], 40, controls=(OTHER,), key_of=key_of)
    mine = [p for p in planned if OTHER in p.aliases or p.label == OTHER]
    assert [(p.label, p.seed, p.done, p.aliases) for p in mine] == [
        (RECORDED, 1, "v1", (OTHER,)),
        (RECORDED, 2, "v2", (OTHER,)),
    ]


def test_without_model_keys_texts_stay_apart() -> None:
    planned = plan(records(), 1, [1, 2], 40, controls=(OTHER,))
    mine = [p for p in planned if p.label == OTHER]
    assert [(p.seed, p.done) for p in mine] == [(1, None), (2, None)]  # trained: nothing says it is the same
