"""verify's training flags: the config it re-trains with, and which records it may reuse (no Ray)."""

from __future__ import annotations

from analysis_fakes import record, search_records

from tlmsearch.analysis.plan import plan, same_training
from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.verify import retrain_config
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.resources import trial_device_kind


def search() -> SearchConfig:
    return SearchConfig(preset="tiny", seed=4, train=TrainConfig(steps=40, eval_interval=10), data=DataConfig())


def test_retrain_config_defaults_to_the_search_with_fresh_seeds() -> None:
    cfg, seeds = retrain_config(search(), seeds=3)
    assert seeds == [5, 6, 7] and cfg.train == search().train.replace(seed=5) and cfg.data == search().data


def test_retrain_config_applies_flags() -> None:
    cfg, seeds = retrain_config(search(), seeds=2, steps=20, train={"lr": 0.01, "seed": 9}, data={"corpus": "pydoc"})
    assert seeds == [9, 10] and (cfg.train.steps, cfg.train.lr, cfg.train.seed) == (20, 0.01, 9)
    assert cfg.data.corpus == "pydoc" and cfg.train.eval_interval == 10  # --steps changes the step count only


def _verified(trial_id: str, spec: str, seed: int, train: dict | None) -> TrialRecord:
    rec = record(trial_id, spec, 2.0, kind="verify", seed=seed)
    return TrialRecord.from_dict({**rec, "train": train or {}, "data": DataConfig().to_dict() if train else {}})


def test_reuse_needs_the_same_training_settings() -> None:
    wanted = TrainConfig(steps=40, seed=1).to_dict()
    data = DataConfig().to_dict()
    same = _verified("v1", "uniform", 1, {**wanted, "seed": 1, "threads": 2})  # seed/threads do not count
    other_lr = _verified("v2", "uniform", 1, {**wanted, "lr": 0.01})
    assert same_training(same, wanted, data)
    assert not same_training(other_lr, wanted, data)
    assert not same_training(same, wanted, {**data, "corpus": "pydoc"})


def test_reuse_needs_the_same_init_mode() -> None:
    data = DataConfig().to_dict()
    keyed = TrainConfig(steps=40, seed=1).to_dict()
    stream = TrainConfig(steps=40, seed=1, init="stream").to_dict()
    assert same_training(_verified("v1", "uniform", 1, keyed), keyed, data)
    assert not same_training(_verified("v2", "uniform", 1, keyed), stream, data)
    assert not same_training(_verified("v3", "uniform", 1, stream), keyed, data)


def test_reuse_needs_the_same_parametrization() -> None:
    data = DataConfig().to_dict()
    standard = TrainConfig(steps=40, seed=1).to_dict()
    width = TrainConfig(steps=40, seed=1, parametrization="width").to_dict()
    assert same_training(_verified("v1", "uniform", 1, standard), standard, data)
    assert not same_training(_verified("v2", "uniform", 1, standard), width, data)
    assert not same_training(_verified("v3", "uniform", 1, width), standard, data)


def test_reuse_needs_the_same_kind_of_device() -> None:
    wanted = TrainConfig(steps=40, seed=1).to_dict()
    data = DataConfig().to_dict()
    on_cpu = _verified("v1", "uniform", 1, wanted)  # records name their devices: "cpu", "GPU 0 (...)"
    on_gpu = TrialRecord.from_dict({**on_cpu.to_dict(), "devices": ["GPU 0 (NVIDIA H200)"]})
    assert same_training(on_cpu, wanted, data, "cpu") and not same_training(on_cpu, wanted, data, "cuda")
    assert same_training(on_gpu, wanted, data, "cuda") and not same_training(on_gpu, wanted, data, "cpu")
    assert same_training(on_gpu, wanted, data)  # no device given: not compared


def test_trials_train_on_the_device_their_resources_give() -> None:
    assert trial_device_kind(search()) == "cpu"
    assert trial_device_kind(search().replace(gpus_per_trial=0.25)) == "cuda"
    assert trial_device_kind(search().replace(train=TrainConfig(device="cuda"))) == "cuda"
    assert trial_device_kind(search().replace(gpus_per_trial=1.0, train=TrainConfig(device="cpu"))) == "cpu"


def test_plan_reuses_only_matching_records() -> None:
    records = [TrialRecord.from_dict(r) for r in search_records()]
    wanted = TrainConfig(steps=40).to_dict()
    data = DataConfig().to_dict()
    verified = [
        _verified("v1", "uniform", 1, wanted),
        _verified("v2", "cosine:start=1.5,end=0.5", 1, {**wanted, "lr": 0.5}),
    ]

    def reusable(r: TrialRecord) -> bool:
        return same_training(r, wanted, data)

    planned = {p.label: p for p in plan(records + verified, 1, [1], 40, reusable) if p.seed == 1}
    assert planned["uniform"].done == "v1"
    assert planned["cosine:start=1.5,end=0.5"].done is None  # trained with another lr: train it again
    anything = {p.label: p for p in plan(records + verified, 1, [1], 40) if p.seed == 1}
    assert anything["cosine:start=1.5,end=0.5"].done == "v2"  # the default reuses by step count alone
