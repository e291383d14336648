"""`--pack auto|on|off`: the measured rule (pure) and how it sizes packs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tlmsearch.configs.presets import preset
from tlmsearch.configs.verify import check_pack
from tlmsearch.core.base import TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models import count_params
from tlmsearch.training.pack.auto import (
    MAX_MEMBERS,
    MEASURED,
    choose,
    faster_members,
    plan_time,
    split,
)

BENCH = Path(__file__).resolve().parents[3] / "bench" / "data"
SIZES = {p: count_params(preset(p).model_config("transformer")).non_embedding for p in ("tiny", "cpu-xs", "cpu-s")}
TINY, CPU_XS, CPU_S = SIZES["tiny"], SIZES["cpu-xs"], SIZES["cpu-s"]


def cpu(mode: str, size: int, threads: int = 1, dtype: str = "float32", members: int = 8, slots: int = 1) -> bool:
    return choose(
        mode, device="cpu", threads=threads, dtype=dtype, non_embedding=size, members=members, slots=slots
    ).pack


def test_the_table_is_bench_packs_measurement() -> None:
    """MEASURED is bench/data/pack-cpu-*.json: per (shape, threads, members) the newest file's cell,
    its slowest repeat's training-time ratio; cells measured once are left out."""
    newest: dict[tuple[str, int, int], tuple[str, dict]] = {}
    for path in BENCH.glob("pack-cpu-*.json"):
        doc = json.loads(path.read_text())
        for cell in doc["cells"]:
            key = (cell["shape"], cell["threads"], cell["members"])
            if key not in newest or doc["machine"]["date"] > newest[key][0]:
                newest[key] = (doc["machine"]["date"], cell)
    expected: dict[tuple[str, int, str], dict[int, dict[int, float]]] = {}
    for (shape, threads, members), (_, cell) in newest.items():
        if len(cell["ratios_train"]) >= 2:
            sizes = expected.setdefault(("cpu", threads, "float32"), {})
            sizes.setdefault(SIZES[shape], {})[members] = round(min(cell["ratios_train"]), 2)
    got = {k: {size: dict(ratios) for size, ratios in v} for k, v in MEASURED.items()}
    assert got == expected
    for points in MEASURED.values():
        assert [size for size, _ in points] == sorted(size for size, _ in points)


def test_auto_never_packs_where_a_pack_measured_slower_or_the_slots_run_faster() -> None:
    for (device, threads, dtype), points in MEASURED.items():
        for size, _ in points:
            below = [ratios for s, ratios in points if s <= size]
            for n in range(1, 13):
                for slots in (1, 2, 3, 4):
                    got = choose(
                        "auto", device=device, threads=threads, dtype=dtype, non_embedding=size, members=n, slots=slots
                    )
                    for m in set(got.sizes):  # every pack size measured faster here and at every size below
                        assert all(ratios.get(m, 0.0) > 1 for ratios in below), (size, n, slots, got)
                    assert len(set(got.sizes)) <= 1 and sum(got.sizes) <= n
                    if got.pack:
                        m = got.sizes[0]
                        ratio = min(ratios[m] for ratios in below)
                        assert plan_time(n, m, ratio, slots) < plan_time(n, 1, 1.0, slots), (size, n, slots)


def test_auto_at_tiny_packs_fours_where_they_beat_the_slots() -> None:
    def sizes(members: int, slots: int, size: int = TINY) -> tuple[int, ...]:
        return choose(
            "auto", device="cpu", threads=1, dtype="float32", non_embedding=size, members=members, slots=slots
        ).sizes

    assert sizes(8, 1) == (4, 4) and sizes(8, 2) == (4, 4) and sizes(5, 1) == (4,)  # the fifth trains alone
    assert sizes(4, 2) == ()  # one pack of 4 at 1.56x (2.56 trial-times) loses to 2 slots (2)
    assert sizes(3, 1) == sizes(2, 1) == ()  # packs of 2 and 3 measured slower (0.92x, 0.94x)
    assert sizes(20, 2) == (4,) * 5 and sizes(1_000, 1, size=1_000) == (4,) * 250
    assert not cpu("auto", TINY + 1)  # above tiny: unmeasured up to cpu-xs, which measured slower
    assert not cpu("auto", CPU_XS) and not cpu("auto", CPU_S) and not cpu("auto", 10 * CPU_S)
    assert not cpu("auto", TINY, threads=2)  # 0.15x
    assert not cpu("auto", TINY, threads=4) and not cpu("auto", TINY, dtype="bfloat16")  # never measured
    on_gpu = choose("auto", device="cuda", threads=1, dtype="bfloat16", non_embedding=TINY, members=64)
    assert not on_gpu.pack and "no packed/separate figure measured for cuda" in on_gpu.reason
    assert not cpu("auto", TINY, members=1)  # nothing to pack with
    reason = choose("auto", device="cpu", threads=1, dtype="float32", non_embedding=TINY, members=8).reason
    assert "4 members 1.56x" in reason and "packs of 4" in reason
    assert (
        "slots"
        in choose("auto", device="cpu", threads=1, dtype="float32", non_embedding=TINY, members=4, slots=2).reason
    )


def test_a_larger_size_is_refused_even_when_a_later_point_measured_faster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        MEASURED, ("cpu", 1, "float32"), ((100, {4: 1.2, 2: 1.1}), (1_000, {4: 0.9, 2: 1.3}), (10_000, {4: 1.5}))
    )
    assert faster_members("cpu", 1, "float32", 100)[0] == {4: 1.2, 2: 1.1}
    assert faster_members("cpu", 1, "float32", 500)[0] == {2: 1.1}  # 4 members measured 0.9x at 1,000
    assert faster_members("cpu", 1, "float32", 5_000)[0] == {}  # 2 members were not measured at 10,000
    assert faster_members("cpu", 1, "float32", 20_000)[0] == {}  # above the largest measured


def test_on_and_off() -> None:
    assert cpu("on", 10 * CPU_S, threads=4) and not cpu("off", TINY)
    on = choose("on", device="cuda", threads=1, dtype="bfloat16", non_embedding=1, members=40, slots=1)
    assert on.sizes == (14, 13, 13) and max(on.sizes) <= MAX_MEMBERS
    assert choose("on", device="cpu", threads=1, dtype="float32", non_embedding=1, members=4, slots=2).sizes == (2, 2)


def test_split_fills_the_parallel_slots_and_caps_the_members() -> None:
    assert split(12, 4) == [4, 4, 4]
    assert split(10, 4) == [4, 3, 3]
    assert split(4, 4, slots=2) == [2, 2]  # two slots: two packs, none idle
    assert split(3, 16, slots=8) == [1, 1, 1]
    assert split(0, 4) == []
    assert sum(split(37, 5, slots=3)) == 37 and max(split(37, 5, slots=3)) <= 5
    with pytest.raises(ValueError):
        split(3, 0)


@pytest.mark.parametrize("bad", ["yes", "", None, 1, "packed"])
def test_check_pack_refuses_in_one_line(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"--pack=.* is not allowed; choose one of: auto, on, off"):
        check_pack(bad, flags=True)
    assert check_pack(" Auto ") == "auto" and check_pack("off") == "off"


def test_a_verify_trial_of_tiny_packs_under_auto_at_one_thread() -> None:
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.core.base import DataConfig
    from tlmsearch.tuning.pack_runs import pack_choice

    cfg = SearchConfig(arch="transformer", preset="tiny", train=TrainConfig(steps=4), data=DataConfig(corpus="pydoc"))
    assert pack_choice(cfg, "auto", 8).sizes == (4, 4)
    assert not pack_choice(cfg.replace(cpus_per_trial=2), "auto", 8).pack  # two threads a trial: 0.15x
    assert not pack_choice(cfg.replace(preset="cpu-xs"), "auto", 8).pack
    assert not pack_choice(cfg.replace(gpus_per_trial=0.5), "auto", 8).pack  # CUDA: not measured yet


def test_a_study_sets_its_verifications_pack_and_an_old_study_reads_off() -> None:
    from tlmsearch.configs.study import StudyConfig

    assert StudyConfig().pack == "off" and StudyConfig(pack="auto").pack == "auto"
    raw = StudyConfig(pack="on").to_dict()
    assert StudyConfig.from_dict(raw).pack == "on"
    raw.pop("pack")  # a study written before --pack
    assert StudyConfig.from_dict(raw).pack == "off"
    with pytest.raises(ConfigError, match="pack"):
        StudyConfig(pack="sometimes")
