"""Data-parallel training gives the numbers of one worker: in float64 on CPU (gloo), 2 and 3
worker processes, each reading its share of the same global batch, end with the loss curve and
the final weights of `train` alone, for every family; their replicas stay equal; and the check
fails when one worker reads the wrong windows.

Two process groups (2 and 3 workers) train every job of this module once (module fixture);
the tests compare. Uneven shares are covered: 5 validation windows over 2 and 3 workers, and a
batch of 5 with gradient accumulation, a binding clip, the moving average and the width
parametrisation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from data_parallel_workers import Job, run_group

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.training.parallel import DataParallel, check_batch, shard
from tlmsearch.training.trainer import CHECKPOINT_FILE, train

FAMILIES = ("transformer", "gated_attention", "titans", "hope_attention")
TOL = 1e-10
# inner-update clips tight enough that some, not all, token updates are clipped: the workers' counts must add up
TIGHT_CLIPS: dict[str, dict[str, Any]] = {
    "titans": {"options": {"mem_max_grad_norm": 0.5}},
    "hope_attention": {"options": {"cms_max_grad_norm": 0.1}},
}
KEYS = ("step", "tokens", "val_loss", "val_bpb", "train_loss", "lr", "inner_clip_frac")


def quick(**kw: Any) -> TrainConfig:
    base: dict[str, Any] = dict(steps=6, batch_size=6, eval_interval=3, eval_windows=5, warmup_steps=2, threads=1)
    return TrainConfig(**{**base, **kw})


def jobs() -> list[Job]:
    shape = preset("tiny")
    out: list[Job] = [
        (arch, shape.model_config(arch, (96, 32), **TIGHT_CLIPS.get(arch, {})).to_dict(), quick().to_dict(), False)
        for arch in FAMILIES
    ]
    options = quick(batch_size=5, grad_accum=2, ema_decay=0.9, grad_clip=0.05, parametrization="width", lr=3e-3)
    out.append(("options", shape.model_config("transformer", (96, 32)).to_dict(), options.to_dict(), False))
    return out


WRONG: Job = ("wrong", *jobs()[0][1:3], True)  # type: ignore[assignment]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every job trained alone (in this process) and on 2 and 3 workers (the wrong one on 2)."""
    root = tmp_path_factory.mktemp("data-parallel")
    cache = root / "cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TLMSEARCH_CACHE", str(cache))
        mp.setattr("tlmsearch.training.trainer.matmul_peak", lambda device, dtype, cache_dir=None: 1e11)
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            for name, model, cfg, _ in jobs():
                folder = root / "1" / name
                model_cfg, train_cfg = ModelConfig.from_dict(model), TrainConfig.from_dict(cfg)
                result = train(model_cfg, train_cfg, DataConfig(corpus="pydoc"), checkpoint_dir=folder)
                (folder / "curve.json").write_text(json.dumps({"curve": result.curve, "metrics": result.metrics}))
                torch.save(torch.load(folder / CHECKPOINT_FILE, weights_only=True)["model"], folder / "rank0.pt")
        finally:
            torch.set_default_dtype(old)
        run_group(2, [*jobs(), WRONG], root / "2", cache, "pydoc")
        run_group(3, jobs(), root / "3", cache, "pydoc")
    yield root


def assert_same(alone: Path, workers: Path, n: int) -> None:
    """The curve and final weights of `workers` (n of them) equal those of `alone` to TOL."""
    a, b = (json.loads((p / "curve.json").read_text()) for p in (alone, workers))
    assert len(a["curve"]) == len(b["curve"]) == 2
    for x, y in zip(a["curve"], b["curve"], strict=True):
        assert set(x) == set(y)
        for key in KEYS:
            if key in x:
                assert abs(x[key] - y[key]) <= TOL * max(1.0, abs(x[key])), (key, x[key], y[key])
    one = torch.load(alone / "rank0.pt", weights_only=True)
    for rank in range(n):
        mine = torch.load(workers / f"rank{rank}.pt", weights_only=True)
        assert set(mine) == set(one)
        for name, w in one.items():
            assert mine[name].dtype == torch.float64
            diff = (mine[name] - w).abs().max().item()
            assert diff <= TOL, (rank, name, diff)


@pytest.mark.parametrize("arch", FAMILIES)
@pytest.mark.slow  # the module's two process groups: ~40 s on one core
def test_two_and_three_workers_equal_one(runs: Path, arch: str) -> None:
    for n in (2, 3):
        assert_same(runs / "1" / arch, runs / str(n) / arch, n)
    if arch in ("titans", "hope_attention"):  # the inner-update clip counts of all workers add up
        fracs = [c["inner_clip_frac"] for c in json.loads((runs / "1" / arch / "curve.json").read_text())["curve"]]
        assert all(0 < f < 1 for f in fracs), fracs


@pytest.mark.slow  # the module's two process groups: ~40 s on one core
def test_uneven_shares_accumulation_clip_ema_width(runs: Path) -> None:
    for n in (2, 3):
        assert_same(runs / "1" / "options", runs / str(n) / "options", n)
    curve = json.loads((runs / "1" / "options" / "curve.json").read_text())["curve"]
    assert "val_loss_last" in curve[-1] and curve[-1]["val_loss_last"] != curve[-1]["val_loss"]  # the EMA is on


@pytest.mark.slow  # the module's two process groups: ~40 s on one core
def test_the_check_fails_when_a_worker_reads_the_wrong_windows(runs: Path) -> None:
    with pytest.raises(AssertionError):
        assert_same(runs / "1" / "transformer", runs / "2" / "wrong", 2)


def test_shares_cover_the_batch_once_in_order() -> None:
    for n in range(1, 12):
        for world in range(1, n + 1):
            rows = [list(range(n))[shard(n, r, world)] for r in range(world)]
            assert sum(rows, []) == list(range(n))
            assert max(map(len, rows)) - min(map(len, rows)) <= 1
    assert DataParallel(rank=1, world=3).rows(5) == slice(1, 3)


def test_refusals_name_the_field() -> None:
    with pytest.raises(ConfigError, match="batch_size=2 is smaller than workers=3"):
        check_batch(2, 3)
    check_batch(3, 3)
    with pytest.raises(ConfigError, match="rank=3 must lie in"):
        DataParallel(rank=3, world=3)
    with pytest.raises(ConfigError, match="workers=0"):
        DataParallel(rank=0, world=0)
