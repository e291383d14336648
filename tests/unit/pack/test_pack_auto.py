"""`--pack auto|on|off`: the measured rule (pure) and how it sizes packs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tlmsearch.configs.base import TrainConfig
from tlmsearch.configs.presets import preset
from tlmsearch.errors import ConfigError
from tlmsearch.models import count_params
from tlmsearch.training.pack.auto import (
    MAX_MEMBERS,
    MEASURED,
    MEASURED_MEMBERS,
    check_pack,
    choose,
    measured_faster,
    split,
)

BENCH = Path(__file__).resolve().parents[3] / "bench" / "data"
TINY, CPU_XS, CPU_S = (
    count_params(preset(p).model_config("transformer")).non_embedding for p in ("tiny", "cpu-xs", "cpu-s")
)


def cpu(mode: str, size: int, threads: int = 1, dtype: str = "float32", members: int = 8) -> bool:
    return choose(mode, device="cpu", threads=threads, dtype=dtype, non_embedding=size, members=members).pack


def test_the_table_is_bench_packs_measurement() -> None:
    """MEASURED holds bench/data/pack-cpu-*.json's training-time ratios at the presets' sizes."""
    cells = []
    for path in BENCH.glob("pack-cpu-*.json"):
        cells += json.loads(path.read_text())["cells"]
    sizes = {"tiny": TINY, "cpu-xs": CPU_XS, "cpu-s": CPU_S}
    for cell in cells:
        if cell["threads"] == 1 or cell["shape"] == "tiny":  # two-thread cpu-xs/cpu-s: one repeat, stalls
            points = dict(MEASURED[("cpu", cell["threads"], "float32")])
            assert points[sizes[cell["shape"]]] == pytest.approx(cell["ratio_train"], abs=0.005)
            assert cell["members"] == MEASURED_MEMBERS


def test_auto_never_packs_where_a_pack_measured_slower() -> None:
    for (device, threads, dtype), points in MEASURED.items():
        for size, ratio in points:
            got = choose("auto", device=device, threads=threads, dtype=dtype, non_embedding=size, members=4)
            assert got.pack == (ratio > 1 and all(r > 1 for s, r in points if s <= size))
    assert cpu("auto", TINY) and cpu("auto", 1_000)  # measured faster, and smaller (more overhead)
    assert not cpu("auto", TINY + 1)  # above tiny: unmeasured up to cpu-xs, which measured slower
    assert not cpu("auto", CPU_XS) and not cpu("auto", CPU_S) and not cpu("auto", 10 * CPU_S)
    assert not cpu("auto", TINY, threads=2)  # 0.15x
    assert not cpu("auto", TINY, threads=4) and not cpu("auto", TINY, dtype="bfloat16")  # never measured
    on_gpu = choose("auto", device="cuda", threads=1, dtype="bfloat16", non_embedding=TINY, members=64)
    assert not on_gpu.pack and "no packed/separate figure measured for cuda" in on_gpu.reason
    assert not cpu("auto", TINY, members=1)  # nothing to pack with
    assert (
        "1.44x faster" in choose("auto", device="cpu", threads=1, dtype="float32", non_embedding=TINY, members=4).reason
    )
    assert "0.91x" in choose("auto", device="cpu", threads=1, dtype="float32", non_embedding=CPU_XS, members=4).reason


def test_a_larger_size_is_refused_even_when_a_later_point_measured_faster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(MEASURED, ("cpu", 1, "float32"), ((100, 1.2), (1_000, 0.9), (10_000, 1.5)))
    assert measured_faster("cpu", 1, "float32", 100)[0]
    assert not measured_faster("cpu", 1, "float32", 5_000)[0]  # 0.9x at 1,000 stops the rule there
    assert not measured_faster("cpu", 1, "float32", 20_000)[0]  # above the largest measured


def test_on_and_off() -> None:
    assert cpu("on", 10 * CPU_S, threads=4) and not cpu("off", TINY)
    assert (
        choose("on", device="cuda", threads=1, dtype="bfloat16", non_embedding=1, members=3).max_members == MAX_MEMBERS
    )
    assert choose("auto", device="cpu", threads=1, dtype="float32", non_embedding=TINY, members=9).max_members == 4


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
    from tlmsearch.configs.base import DataConfig
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.tuning.pack_trials import pack_choice

    cfg = SearchConfig(arch="transformer", preset="tiny", train=TrainConfig(steps=4), data=DataConfig(corpus="pydoc"))
    assert pack_choice(cfg, "auto", 6).pack
    assert not pack_choice(cfg.replace(cpus_per_trial=2), "auto", 6).pack  # two threads a trial: 0.15x
    assert not pack_choice(cfg.replace(preset="cpu-xs"), "auto", 6).pack
    assert not pack_choice(cfg.replace(gpus_per_trial=0.5), "auto", 6).pack  # CUDA: not measured yet


def test_a_study_sets_its_verifications_pack_and_an_old_study_reads_off() -> None:
    from tlmsearch.configs.study import StudyConfig

    assert StudyConfig().pack == "off" and StudyConfig(pack="auto").pack == "auto"
    raw = StudyConfig(pack="on").to_dict()
    assert StudyConfig.from_dict(raw).pack == "on"
    raw.pop("pack")  # a study written before --pack
    assert StudyConfig.from_dict(raw).pack == "off"
    with pytest.raises(ConfigError, match="pack"):
        StudyConfig(pack="sometimes")
