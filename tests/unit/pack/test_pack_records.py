"""A packed verification trial's record against the same trial's record through Ray's trainable.

`tuning.pack_runs.train_members` (what a pack's Ray task runs) and `trainable.run_trial` (what
a Ray trial runs, here with Tune's reporting stubbed) train the same fixed trials, each given
the same resolved `TrialSpec`; both records come from `recorder.record_of(spec, outcome)`.
They have the same fields and the same values: in float64 the losses agree to 1e-10, in
float32 to 2e-5 nats (summation order in vmap's batched matmuls); only times and throughputs
differ.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.trial import SPEC, TrialOutcome, TrialSpec
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.rundir.records import TrialRecord

COSINE = "cosine:start=1.5,end=0.5"
TIMES = {"tokens_per_s", "mfu", "elapsed_s", "wall_s", "train_time_s"}  # measured, not learned
TRIALS = [("uniform", 1, "uniform"), (COSINE, 1, "cosine"), ("knots:k0=3,k1=1", 2, None)]


def search_config() -> SearchConfig:
    return SearchConfig(
        name="pack",
        arch="transformer",
        preset="tiny",
        space="knots",
        trials=1,
        noise_seeds=0,
        train=TrainConfig(steps=6, warmup_steps=2, eval_interval=3, eval_windows=4, batch_size=4),
        data=DataConfig(corpus="pydoc"),
    )


def configs(cfg: SearchConfig) -> list[dict[str, Any]]:
    from tlmsearch.tuning.runner import fixed_config
    from tlmsearch.tuning.specs import with_spec

    return [with_spec(cfg, fixed_config(p, s, "verify", i, baseline=b)) for i, (p, s, b) in enumerate(TRIALS)]


def packed_records(cfg: SearchConfig) -> list[TrialRecord]:
    from tlmsearch.tuning.pack_runs import train_members
    from tlmsearch.tuning.recorder import record_of

    specs = [TrialSpec.from_dict(c[SPEC]) for c in configs(cfg)]
    got = train_members([s.to_dict() for s in specs])
    return [
        record_of(s, TrialOutcome.from_dict(g["outcome"]), trial_id=f"p_{i}", started=g["started"], ended=g["ended"])
        for i, (s, g) in enumerate(zip(specs, got, strict=True))
    ]


def solo_records(cfg: SearchConfig, monkeypatch: pytest.MonkeyPatch) -> list[TrialRecord]:
    """Each trial through `run_trial`, Tune's calls stubbed: its last report makes its record."""
    import time

    from ray import tune

    from tlmsearch.tuning import trainable
    from tlmsearch.tuning.recorder import outcome_of, record_of

    reports: list[dict[str, Any]] = []

    class Context:
        def get_trial_id(self) -> str:
            return "solo"

    monkeypatch.setattr(tune, "get_checkpoint", lambda: None)
    monkeypatch.setattr(tune, "get_context", lambda: Context())
    monkeypatch.setattr(tune, "report", lambda metrics, checkpoint=None: reports.append(metrics))
    where = {"node": None, "devices": ["cpu"], "resources": {"CPU": 1.0}}
    monkeypatch.setattr(trainable, "_placement", lambda asked, device: dict(where))
    out = []
    for i, config in enumerate(configs(cfg)):
        reports.clear()
        started = time.time()
        trainable.run_trial(config)
        spec = TrialSpec.from_dict(config[SPEC])
        out.append(record_of(spec, outcome_of(reports[-1]), trial_id=f"s_{i}", started=started, ended=time.time()))
    return out


def assert_same(packed: TrialRecord, solo: TrialRecord, tol: float) -> None:
    a, b = packed.to_dict(), solo.to_dict()
    assert set(a) == set(b)
    for key in ("kind", "baseline", "status", "params", "profile", "widths", "budget", "shape", "seed"):
        assert a[key] == b[key], key
    for key in ("steps", "max_steps", "full_fidelity", "model", "train", "data", "devices", "resources"):
        assert a[key] == b[key], key
    assert set(a["metrics"]) == set(b["metrics"])
    assert len(a["curve"]) == len(b["curve"])
    for x, y in [(a["metrics"], b["metrics"]), *zip(a["curve"], b["curve"], strict=True)]:
        assert set(x) == set(y)
        for key in set(x) - TIMES:
            assert math.isclose(x[key], y[key], rel_tol=tol, abs_tol=tol), (key, x[key], y[key])


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float64, 1e-10), (torch.float32, 2e-5)])
def test_a_packed_record_equals_the_trial_trained_alone(
    monkeypatch: pytest.MonkeyPatch, dtype: torch.dtype, tol: float
) -> None:
    torch.set_default_dtype(dtype)  # the package's fixture restores it
    cfg = search_config()
    packed = packed_records(cfg)
    solo = solo_records(cfg, monkeypatch)
    assert [r.status for r in packed] == ["complete"] * 3
    assert [r.baseline for r in packed] == ["uniform", "cosine", None]
    assert packed[0].widths != packed[2].widths  # members of different widths, padded in the pack
    for p, s in zip(packed, solo, strict=True):
        assert_same(p, s, tol)


def test_a_pack_that_fails_fails_every_member_with_its_reason() -> None:
    from tlmsearch.tuning.pack_runs import train_members
    from tlmsearch.tuning.recorder import record_of
    from tlmsearch.tuning.runner import fixed_config
    from tlmsearch.tuning.specs import spec_of

    cfg = search_config()
    items = [fixed_config("uniform", 1, "verify", 0, lr=1e-3), fixed_config(COSINE, 1, "verify", 1, lr=2e-3)]
    specs = [spec_of(cfg, c) for c in items]
    got = train_members([s.to_dict() for s in specs])  # two rates: members of no one pack
    for spec, g in zip(specs, got, strict=True):
        outcome = TrialOutcome.from_dict(g["outcome"])
        assert outcome.status == "failed" and outcome.steps == 0 and outcome.curve == ()
        assert str(outcome.reason).startswith("ConfigError: pack member 1 differs from member 0 in train.lr")
        record = record_of(spec, outcome, trial_id="x")
        assert record.status == "failed" and record.train["lr"] in (1e-3, 2e-3)  # what it was to train
