"""A pack's members: who may pack together, and a member that diverges stops alone."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.training.pack import Member, Pack, check_members, train_pack
from tlmsearch.training.trainer import train

PYDOC = DataConfig(corpus="pydoc")


def member(widths: tuple[int, ...] = (64, 64), seed: int = 0, arch: str = "transformer", **train: object) -> Member:
    base: dict[str, object] = dict(steps=20, batch_size=4, eval_interval=10, eval_windows=4, warmup_steps=5, threads=1)
    base.update(train)
    return Member(model=preset("tiny").model_config(arch, widths), train=TrainConfig(seed=seed, **base))  # type: ignore[arg-type]


def test_members_may_differ_in_seed_and_widths_only() -> None:
    check_members([member((96, 32), 0), member((32, 96), 5)])
    with pytest.raises(ConfigError, match=r"member 1 differs from member 0 in train\.lr"):
        check_members([member(), member(lr=1e-3)])
    with pytest.raises(ConfigError, match=r"member 1 differs from member 0 in model\.arch"):
        check_members([member(), member(arch="gated_attention")])
    other_shape = dataclasses.replace(member().model, n_heads=4)
    with pytest.raises(ConfigError, match=r"model\.n_heads"):
        check_members([member(), Member(model=other_shape, train=member().train)])
    check_members([member(compile=True), member(compile=True, seed=1)])  # compile packs (test_pack_compile.py)
    with pytest.raises(ConfigError, match="at least one member"):
        check_members([])


@pytest.mark.slow
def test_a_diverging_member_stops_alone(tmp_path: Path) -> None:
    group = [member((96, 32), 0), member((64, 64), 1), member((32, 96), 2)]
    pack = Pack(group, PYDOC)

    def break_member_1(step: int) -> None:
        if step == 5:  # its weights become infinite after 5 steps: its 6th loss is not finite
            pack.params["norm.weight"][pack.active.index(1)] = math.inf

    reports: list[tuple[int, int]] = []
    outcomes = pack.run(report=lambda i, step, m: reports.append((i, step)), progress=break_member_1)
    broken = outcomes[1]
    assert broken.result is None and broken.diverged is not None
    assert broken.diverged.step == 6 and not math.isfinite(broken.diverged.value)
    assert pack.active == [0, 2]
    assert reports == [(0, 10), (2, 10), (0, 20), (2, 20)]
    for i in (0, 2):  # the others trained on as if alone
        result = outcomes[i].result
        assert result is not None and result.metrics["steps"] == 20
        solo = train(group[i].model, group[i].train, PYDOC)
        for a, b in zip(result.curve, solo.curve, strict=True):
            assert abs(a["val_loss"] - b["val_loss"]) < 1e-10
            assert abs(a["train_loss"] - b["train_loss"]) < 1e-10


def test_every_member_diverging_ends_the_pack() -> None:
    group = [member(seed=0), member(seed=1)]
    pack = Pack(group, PYDOC)
    pack.params["embed.weight"].fill_(math.nan)
    outcomes = pack.run()
    assert [o.diverged.step if o.diverged else None for o in outcomes] == [1, 1]
    assert pack.step == 1 and pack.active == []


def test_train_pack_reports_each_member(tmp_path: Path) -> None:
    seen: list[tuple[int, int, float]] = []
    outcomes = train_pack(
        [member((96, 32), 3), member((32, 96), 3)], PYDOC, report=lambda i, s, m: seen.append((i, s, m["val_loss"]))
    )
    assert [(i, s) for i, s, _ in seen] == [(0, 10), (1, 10), (0, 20), (1, 20)]
    finals = [o.result.metrics for o in outcomes if o.result is not None]
    assert [m["params_mlp"] for m in finals] == [3 * 32 * 128, 3 * 32 * 128]  # each its own, exact budget
    assert finals[0]["val_loss"] != finals[1]["val_loss"]  # two profiles, two results
    assert all(m["tokens"] == 20 * 4 * 32 for m in finals)


@pytest.mark.parametrize("arch", ["transformer", "gated_attention", "hope_attention", "titans"])
def test_bf16_autocast_in_a_pack(arch: str) -> None:
    """Every family trains in a pack under bf16 autocast (float32 weights), close to alone."""
    torch.set_default_dtype(torch.float32)  # the fixture restores its own afterwards
    group = [member((96, 32), 0, arch, steps=4, eval_interval=4, dtype="bfloat16"), member((32, 96), 1, arch)]
    group[1] = Member(model=group[1].model, train=group[0].train.replace(seed=1))
    outcomes = train_pack(group, PYDOC)
    for m, outcome in zip(group, outcomes, strict=True):
        assert outcome.result is not None
        packed = outcome.result.metrics["val_loss"]
        solo = train(m.model, m.train, PYDOC).metrics["val_loss"]
        assert math.isfinite(packed) and abs(packed - solo) < 0.02, (arch, packed, solo)
