"""A trial's device and threads: the GPU Ray assigned becomes torch's device, threads follow the
CPUs given, and the node, devices and reserved resources (a GPU fraction) reach the record.

Ray and CUDA are faked (monkeypatched runtime context, torch.cuda and Tune's report), so this
runs on any CPU machine without starting Ray; the real thing runs in
tests/integration/test_cluster.py (fake GPU resources) and the `gpu`-marked tests.
"""

from __future__ import annotations

from typing import Any

import pytest

from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.trial import SPEC, TrialSpec
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.training.hardware import assigned_cuda_index
from tlmsearch.tuning.recorder import outcome_of, record_of
from tlmsearch.tuning.specs import with_spec
from tlmsearch.tuning.trainable import run_trial, trial_train_config


@pytest.mark.parametrize(
    ("ids", "visible", "index"),
    [
        (["3"], "3", 0),  # Ray's default: only the assigned GPU is visible, as torch's device 0
        (["2", "5"], "2,5", 0),
        (["5"], "2,5", 1),  # the assigned id's position among the visible devices
        (["6"], None, 6),  # RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES: every GPU visible
        (["6"], "", 6),
        ([], "0", 0),
        (["GPU-1f2e"], "GPU-aaaa,GPU-1f2e", 1),  # UUIDs
        (["GPU-1f2e"], None, 0),
    ],
)
def test_assigned_cuda_index(ids: list[str], visible: str | None, index: int) -> None:
    assert assigned_cuda_index(ids, visible) == index


def cfg(**changes: Any) -> SearchConfig:
    base = SearchConfig(
        preset="tiny", trials=2, train=TrainConfig(steps=10, eval_interval=5), data=DataConfig(corpus="pydoc")
    )
    return base.replace(**changes)


def test_trial_train_config_threads_and_device() -> None:
    assert trial_train_config(cfg(cpus_per_trial=3), 7).threads == 3
    assert trial_train_config(cfg(cpus_per_trial=0.5), 7).threads == 1  # at least one thread
    assert trial_train_config(cfg(cpus_per_trial=4, train=TrainConfig(threads=2)), 7).threads == 2  # set explicitly
    gpu = trial_train_config(cfg(gpus_per_trial=0.25), 7)
    assert (gpu.device, gpu.dtype, gpu.seed) == ("cuda", "bfloat16", 7)  # bf16 autocast on CUDA
    assert trial_train_config(cfg(), 7).device == cfg().train.device


class FakeContext:
    def __init__(self, gpu_ids: list[str], assigned: dict[str, float]) -> None:
        self.gpu_ids, self.assigned = gpu_ids, assigned

    def get_accelerator_ids(self) -> dict[str, list[str]]:
        return {"GPU": self.gpu_ids}

    def get_assigned_resources(self) -> dict[str, float]:
        return dict(self.assigned)

    def get_node_id(self) -> str:
        return "node-abc"


@pytest.fixture
def fake_ray_gpu(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Ray gave this trial GPU 3 (a quarter of it) and 2 CPUs; CUDA "has" that one visible device."""
    import ray
    import torch
    from ray import tune

    import tlmsearch.training.trainer as trainer

    seen: dict[str, Any] = {"reports": [], "set_device": [], "threads": []}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    monkeypatch.setattr(ray, "get_runtime_context", lambda: FakeContext(["3"], {"CPU": 2.0, "GPU": 0.25}))
    monkeypatch.setattr(tune, "report", lambda metrics, checkpoint=None: seen["reports"].append(metrics))
    monkeypatch.setattr(tune, "get_checkpoint", lambda: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: seen["set_device"].append(i))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=None: "Fake H200")
    monkeypatch.setattr(torch, "set_num_threads", lambda n: seen["threads"].append(n))
    monkeypatch.setattr(trainer, "resolve_vocab", lambda model_cfg, data_cfg: model_cfg)

    def fake_train(model_cfg: Any, train_cfg: TrainConfig, data_cfg: Any, *, report: Any, **_: Any) -> None:
        seen["train_cfg"] = train_cfg
        report(10, {"step": 10, "val_loss": 3.0, "val_bpb": 1.0, "tokens_per_s": 1.0})

    monkeypatch.setattr(trainer, "train", fake_train)
    return seen


def test_a_gpu_trial_uses_the_assigned_gpu_and_records_its_fraction(fake_ray_gpu: dict[str, Any]) -> None:
    search = cfg(cpus_per_trial=2, gpus_per_trial=0.25)
    config = with_spec(search, {"profile": "uniform", "seed": 4, "kind": "sampled", "number": 0})
    run_trial(config)
    seen = fake_ray_gpu
    assert seen["set_device"] == [0]  # Ray's GPU 3 is torch's cuda:0 under CUDA_VISIBLE_DEVICES=3
    assert seen["threads"] == [2]  # threads = the CPUs Ray gave the trial
    assert (seen["train_cfg"].device, seen["train_cfg"].dtype, seen["train_cfg"].seed) == ("cuda", "bfloat16", 4)
    last = seen["reports"][-1]
    assert last["node"] == "node-abc" and last["devices"] == ["GPU 3 (Fake H200)"]
    assert last["resources"] == {"CPU": 2.0, "GPU": 0.25}
    record = record_of(TrialSpec.from_dict(config[SPEC]), outcome_of(last), trial_id="t1")
    assert record.node == "node-abc" and record.devices == ("GPU 3 (Fake H200)",)
    assert record.resources == {"CPU": 2.0, "GPU": 0.25} and record.status == "complete"
    assert type(record).from_dict(record.to_dict()) == record


def test_without_visible_devices_the_ray_id_is_torchs_index(
    fake_ray_gpu: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    run_trial(with_spec(cfg(gpus_per_trial=1), {"profile": "uniform"}))
    assert fake_ray_gpu["set_device"] == [3]


def test_a_cpu_trial_touches_no_gpu(fake_ray_gpu: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    monkeypatch.setattr(ray, "get_runtime_context", lambda: FakeContext([], {}))  # nothing reported: the request
    # a trial is built from a resolved config: no CUDA on the driver made "auto" 0 GPUs
    run_trial(with_spec(cfg(cpus_per_trial=1.5, gpus_per_trial=0.0), {"profile": "uniform"}))
    seen = fake_ray_gpu
    assert seen["set_device"] == [] and seen["threads"] == [1]
    last = seen["reports"][-1]
    assert last["devices"] == ["cpu"] and last["resources"] == {"CPU": 1.5}
