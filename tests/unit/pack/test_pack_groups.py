"""`compare --pack on|auto` with joint profiles: packs are grouped by everything a pack lets its
members share (the whole model but its MLP widths, the whole training but its seed), so a joint
profile (its own heads or block widths) packs with its own seeds only, never beside MLP-only
profiles, and its pack trains to complete records instead of failing on the differing heads."""

from __future__ import annotations

import dataclasses
from typing import Any

from joint_runs import ATTENTION, BOWTIE, CFG

from tlmsearch.configs.trial import SPEC, TrialSpec
from tlmsearch.core.base import TrainConfig
from tlmsearch.tuning.pack_runs import pack_groups, pack_key, train_members
from tlmsearch.tuning.runner import fixed_config
from tlmsearch.tuning.specs import spec_of, with_spec

COSINE = "cosine:start=1.5,end=0.5"
PROFILES = ("uniform", COSINE, ATTENTION, BOWTIE)
SEEDS = (1, 2)
SMALL = CFG.replace(train=TrainConfig(steps=4, warmup_steps=1, eval_interval=2, eval_windows=2, batch_size=2))


def _configs() -> list[dict[str, Any]]:
    pairs = [(p, s) for p in PROFILES for s in SEEDS]
    return [fixed_config(p, s, "compare", i) for i, (p, s) in enumerate(pairs)]


def test_joint_profiles_pack_with_their_own_seeds_only() -> None:
    configs = _configs()
    packed, separate = pack_groups(SMALL, configs, "on")
    groups = sorted(sorted(configs[i]["profile"] for i in index) for index, _ in packed)
    assert separate == []
    assert groups == sorted([
        sorted(["uniform", "uniform", COSINE, COSINE]),  # MLP-only profiles: one model but the widths
        [ATTENTION, ATTENTION],
        [BOWTIE, BOWTIE],
    ])  # fmt: skip
    for index, _ in packed:  # each group: one key, the one its members share
        assert len({pack_key(spec_of(SMALL, configs[i])) for i in index}) == 1


def test_a_spec_that_cannot_train_has_no_pack() -> None:
    spec = spec_of(SMALL, fixed_config("uniform", 1, "compare", 0))
    assert pack_key(spec) is not None
    assert pack_key(dataclasses.replace(spec, model=None, error="ConfigError: too wide")) is None


def test_a_joint_pack_trains_to_complete_outcomes() -> None:
    configs = [with_spec(SMALL, c) for c in _configs() if c["profile"] == ATTENTION]
    specs = [TrialSpec.from_dict(c[SPEC]) for c in configs]
    assert specs[0].model is not None and specs[0].model.attn_heads  # per-layer query heads
    got = train_members([s.to_dict() for s in specs])
    assert [g["outcome"]["status"] for g in got] == ["ended", "ended"]
    assert all(g["outcome"]["steps"] == 4 for g in got)
