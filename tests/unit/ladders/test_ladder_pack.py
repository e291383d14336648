"""A ladder hands its `pack` setting to every point's verification (verify --pack), from the
config file and from the command line; a bad value is one line."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tlmsearch.cli import build_parser
from tlmsearch.cli.ladder import build_config
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.tuning import ladder as ladder_mod

POINTS = ["tiny:n_layers=4@0.25", "tiny:n_layers=4,d_model=48,n_heads=3,base_width=96@0.25"]  # one depth, head size 16


def _config(tmp_path: Path, **extra: Any) -> LadderConfig:
    return LadderConfig.from_dict(
        {"name": "lad", "runs_dir": str(tmp_path), "points": POINTS, "profiles": [], "seeds": 2,
         "lr_calibration": "off", "data": {"corpus": "pydoc"}, **extra}
    )  # fmt: skip


@pytest.mark.parametrize("pack", ["off", "on", "auto"])
def test_every_point_verifies_with_the_ladders_pack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pack: str) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(ladder_mod.runner, "search", lambda cfg, **kw: None)  # no training: the search phase
    monkeypatch.setattr(
        ladder_mod.verifying,
        "verify",
        lambda run_dir, **kw: calls.append(kw) or SimpleNamespace(verdicts=[], new_records=[]),
    )
    ladder_mod.start_ladder(_config(tmp_path, pack=pack), progress=False)
    assert [c["pack"] for c in calls] == [pack, pack]


def test_the_flag_sets_it_and_a_bad_value_is_refused(tmp_path: Path) -> None:
    parser = build_parser()
    argv = ["ladder", "run", "--points", *POINTS, "--runs-dir", str(tmp_path)]
    assert build_config(parser.parse_args(argv)).pack == "off"
    assert build_config(parser.parse_args([*argv, "--pack", "auto"])).pack == "auto"
    with pytest.raises(ConfigError, match=r"pack='sometimes' is not allowed; choose one of: auto, on, off"):
        _config(tmp_path, pack="sometimes")
