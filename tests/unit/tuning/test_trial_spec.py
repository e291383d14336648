"""A trial is resolved once, on the driver, into a `TrialSpec`; the worker trains exactly it and
reports a `TrialOutcome`; the record is made of the two (`recorder.record_of`), in the
trials.jsonl layout of records written before (no Ray started: Tune's calls are stubbed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.trial import OUTCOME, SPACE_ERROR, SPEC, TrialOutcome, TrialSpec, trial_spec
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.recorder import outcome_of, record_of
from tlmsearch.tuning.specs import data_vocab, spec_of, with_spec

CFG = SearchConfig(
    name="spec", preset="tiny", model={"n_layers": 4}, trials=2, base_widths=(32, 96), cpus_per_trial=2,
    train=TrainConfig(steps=4, eval_interval=2, warmup_steps=1, batch_size=2, eval_windows=2),
    data=DataConfig(corpus="pydoc"),
)  # fmt: skip
COSINE = "cosine:start=1.5,end=0.5"

# the top-level keys (in order) of a trials.jsonl line of layout 2 (records.RUN_LAYOUT): those of
# the records before records were made from a spec and an outcome, and the layout mark
RECORD_KEYS = [
    "trial_id", "number", "kind", "baseline", "status", "reason", "params", "profile", "widths", "budget", "shape",
    "seed", "steps", "max_steps", "full_fidelity", "curve", "metrics", "started_at", "ended_at", "wall_s", "model",
    "train", "data", "node", "devices", "resources", "retries", "layout",
]  # fmt: skip
BUDGET_KEYS = ["n_layers", "base_width", "multiple_of", "min_width", "max_width"]


def test_a_spec_round_trips_through_json_and_holds_the_resolved_trial() -> None:
    config = {"profile": COSINE, "base_width": 48, "k0": 0.5, "number": 3, "seed": 7, "lr": 2e-3}
    spec = spec_of(CFG, config)
    assert TrialSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert spec.model is not None and spec.model.vocab_size == data_vocab(CFG.data)  # the tokenizer's, set here
    assert sum(spec.widths) == 4 * 48 and spec.budget.base_width == 48 == spec.base_width
    assert (spec.train.seed, spec.train.lr, spec.train.threads) == (7, 2e-3, 2)  # seed, rate, CPUs per trial
    assert spec.params == {"base_width": 48, "k0": 0.5, "lr": 2e-3} and spec.number == 3 and spec.kind == "sampled"
    assert spec.profile == COSINE and spec.data == CFG.data and spec.resources == {"CPU": 2.0}
    failed = spec_of(CFG, {"profile": "no-such-family", "number": 4})
    assert TrialSpec.from_dict(json.loads(json.dumps(failed.to_dict()))) == failed
    assert failed.model is None and failed.error and "no-such-family" in failed.error and failed.widths == ()


def test_a_spec_is_either_trainable_or_says_why_not() -> None:
    spec = trial_spec(CFG, {"profile": "uniform"})
    with pytest.raises(ValueError, match="exactly one of model and error"):
        spec.replace(error="also broken")
    with pytest.raises(ConfigError, match="outcome status"):
        TrialOutcome(status="exploded")


def test_with_spec_builds_the_spec_again_and_keeps_the_identity_keys() -> None:
    config = with_spec(CFG, {"profile": "uniform", "baseline": "uniform", "number": 0, SPEC: {"stale": 1}})
    assert config["profile"] == "uniform" and config["number"] == 0 and config["baseline"] == "uniform"
    assert TrialSpec.from_dict(config[SPEC]) == spec_of(CFG, {"profile": "uniform", "baseline": "uniform", "number": 0})


class _Context:
    def get_trial_id(self) -> str:
        return "spec-trial"


@pytest.fixture
def fake_tune(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Tune's calls inside a trial, stubbed: the reports land in the returned list."""
    from ray import tune

    from tlmsearch.tuning import trainable

    reports: list[dict[str, Any]] = []
    monkeypatch.setattr(tune, "get_checkpoint", lambda: None)
    monkeypatch.setattr(tune, "get_context", lambda: _Context())
    monkeypatch.setattr(tune, "report", lambda metrics, checkpoint=None: reports.append(metrics))
    where = {"node": "n1", "devices": ["cpu"], "resources": {"CPU": 2.0}}
    monkeypatch.setattr(trainable, "_placement", lambda asked, device: dict(where))
    return reports


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the worker resolved something the spec already holds")


@pytest.mark.slow
def test_the_worker_trains_the_spec_without_resolving_anything(
    fake_tune: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tlmsearch.training.trainer as trainer
    from tlmsearch.configs import resolve
    from tlmsearch.configs import trial as trial_module
    from tlmsearch.tuning import trainable

    config = with_spec(CFG, {"profile": COSINE, "base_width": 64, "number": 1, "seed": 3})
    spec = TrialSpec.from_dict(config[SPEC])
    trained: list[tuple[Any, Any]] = []
    real_train = trainer.train

    def train(model_cfg: Any, train_cfg: Any, data_cfg: Any, **kwargs: Any) -> Any:
        trained.append((model_cfg, train_cfg))
        return real_train(model_cfg, train_cfg, data_cfg, **kwargs)

    for module, name in [
        (resolve, "trial_shape"), (resolve, "resolve_model"), (trial_module, "trial_shape"),
        (trainer, "resolve_vocab"), (trial_module, "trial_train_config"), (trial_module, "trial_spec"),
    ]:  # fmt: skip
        monkeypatch.setattr(module, name, _refuse)
    # the worker module holds no resolver to call (were one imported back, it would be patched above)
    assert not any(hasattr(trainable, name) for name in ("trial_shape", "resolve_model", "resolve_vocab"))
    monkeypatch.setattr(trainer, "train", train)
    trainable.run_trial(config)
    assert trained == [(spec.model, spec.train)]  # exactly the spec's model (vocabulary set) and training
    last = fake_tune[-1]
    outcome = outcome_of(last)
    assert outcome.status == "ended" and outcome.steps == 4 and last["step"] == 4 and "failed" not in last
    assert [c["step"] for c in outcome.curve] == [2, 4] and outcome.metrics["params_total"] == last["params_total"]
    record = record_of(spec, outcome, trial_id="t")
    assert record.status == "complete" and record.model == spec.model.to_dict() and record.widths == spec.widths
    assert record.train == spec.train.to_dict() and record.node == "n1" and record.params == {"base_width": 64}


def test_a_spec_that_cannot_train_fails_at_once_with_its_reason(fake_tune: list[dict[str, Any]]) -> None:
    from tlmsearch.tuning import trainable

    config = with_spec(CFG, {"profile": "<search space failed>", SPACE_ERROR: "sample() raised KeyError: 'x'"})
    spec = TrialSpec.from_dict(config[SPEC])
    assert spec.model is None and spec.error == "sample() raised KeyError: 'x'"
    trainable.run_trial(config)
    (last,) = fake_tune
    assert last["failed"] == 1 and last["reason"] == spec.error and last[OUTCOME]["status"] == "failed"
    record = record_of(spec, outcome_of(last), trial_id="t")
    assert (record.status, record.reason, record.profile, record.widths) == ("failed", spec.error, {}, ())
    assert record.budget == spec.budget.to_dict() and record.train == spec.train.to_dict()  # from the spec


def test_a_trial_that_failed_before_training_has_its_model_and_widths_from_the_spec() -> None:
    spec = spec_of(CFG, {"profile": COSINE, "baseline": "cosine", "number": 0})
    died = record_of(spec, outcome_of(None), trial_id="d", error="the trial's worker died")
    assert (died.status, died.reason, died.kind, died.steps) == ("failed", "the trial's worker died", "baseline", 0)
    assert spec.model is not None and died.model == spec.model.to_dict() and died.widths == spec.model.mlp_widths
    assert died.budget == spec.budget.to_dict() and died.shape and died.data == CFG.data.to_dict()
    never = record_of(spec, outcome_of({}), trial_id="n")  # cut before its first report: stopped at step 0
    assert never.status == "stopped" and never.reason == "stopped early at step 0 of 4" and never.model == died.model


def test_the_record_layout_is_unchanged() -> None:
    spec = spec_of(CFG, {"profile": COSINE, "number": 2})
    outcome = TrialOutcome(status="ended", steps=4, curve=({"step": 4, "val_loss": 3.0},), metrics={"val_loss": 3.0})
    line = json.loads(json.dumps(record_of(spec, outcome, trial_id="x", started=1.0, ended=2.0).to_dict()))
    assert list(line) == RECORD_KEYS and list(line["budget"]) == BUDGET_KEYS
    assert list(line["train"]) == list(TrainConfig().to_dict()) and list(line["data"]) == list(DataConfig().to_dict())
    assert TrialRecord.from_dict(line).to_dict() == line
    failed = record_of(spec_of(CFG, {"profile": "42"}), outcome_of(None), trial_id="f")
    assert list(failed.to_dict()) == RECORD_KEYS
