"""bench/bench_pack.py: its shapes and members, and a real run at toy size writing its cells."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from bench import bench_pack as bp
from tlmsearch.models import count_params


def test_the_20m_shape_has_about_20m_parameters() -> None:
    p = bp.shape_preset("gpu-20m")
    n = count_params(p.model_config("transformer", p.uniform_widths())).non_embedding
    assert 18e6 < n < 21e6


def test_members_alternate_uniform_and_cosine_with_their_own_seeds() -> None:
    args = argparse.Namespace(steps=0, batch_size=0, device="cpu", dtype="float32", arch="transformer")
    members = bp.make_members("cpu-xs", 3, args)
    assert [m.train.seed for m in members] == [0, 1, 2]
    widths = [m.model.mlp_widths for m in members]
    assert widths[0] == widths[2] != widths[1] and sum(widths[0]) == sum(widths[1])
    assert widths[0] == (192,) * 6 and widths[1][0] > widths[1][-1]  # uniform, then a taper
    assert members[0].train.steps == bp.SHAPES["cpu-xs"][0]


def test_a_toy_run_writes_every_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    for where in ("tlmsearch.training.trainer", "tlmsearch.training.pack.engine"):
        monkeypatch.setattr(f"{where}.matmul_peak", lambda device, dtype, cache_dir=None: 1e11)
    out = tmp_path / "pack.json"
    argv = ["--presets", "tiny", "--members", "2", "1", "--threads", "1", "--steps", "2", "--repeats", "1"]
    bp.main([*argv, "--corpus", "pydoc", "--out", str(out)])
    cells = json.loads(out.read_text())["cells"]
    assert [(c["shape"], c["members"]) for c in cells] == [("tiny", 1), ("tiny", 2)]
    for c in cells:
        assert c["packed_members_per_s_wall"] > 0 and c["separate_members_per_s_train"] > 0
        assert c["ratio_train"] == pytest.approx(c["packed_members_per_s_train"] / c["separate_members_per_s_train"])


def test_each_shape_warms_both_paths_up_untimed_before_its_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, int, int]] = []
    monkeypatch.setattr(
        bp,
        "run_packed",
        lambda members, data: calls.append(("packed", len(members), members[0].train.steps)) or (1.0, 1.0),
    )
    monkeypatch.setattr(
        bp,
        "run_separate",
        lambda members, data: calls.append(("separate", len(members), members[0].train.steps)) or (1.0, 1.0),
    )
    monkeypatch.setattr(bp, "machine_info", lambda: {"load_avg_1m_5m_15m": [0, 0, 0]})
    monkeypatch.setattr(bp, "machine_line", lambda info: "")
    monkeypatch.setattr("tlmsearch.data.prepare", lambda cfg: None)
    out = tmp_path / "pack.json"
    bp.main(
        ["--presets", "tiny", "--members", "2", "--threads", "1", "--steps", "3", "--repeats", "1", "--out", str(out)]
    )
    assert calls[:2] == [("packed", 2, 1), ("separate", 1, 1)]  # the warm-up: one step each, untimed
    assert calls[2:] == [("packed", 2, 3), ("separate", 2, 3)]  # then the cell at its own steps
