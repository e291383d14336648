"""A ladder shows the progress of every phase it trains when asked: each point's search (its
learning-rate calibration can be the longest phase of a point, hours on a CPU) as well as its
verification, and neither when run quietly."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tlmsearch.ladders.config import LadderConfig
from tlmsearch.tuning import ladder as ladder_mod

POINTS = ("tiny:n_layers=4@0.25", "tiny:n_layers=4,d_model=48,n_heads=3,base_width=96@0.25")


@pytest.mark.parametrize("progress", [True, False])
def test_every_phase_of_every_point_shows_progress_as_the_ladder_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], progress: bool
) -> None:
    asked: list[tuple[str, str, bool]] = []

    def search(cfg: Any, sub: Path, **kw: Any) -> None:
        asked.append(("search", Path(sub).name, kw["progress"]))

    def verify(run_dir: Path, **kw: Any) -> SimpleNamespace:
        asked.append(("verify", Path(run_dir).name, kw["progress"]))
        return SimpleNamespace(verdicts=[], new_records=[])

    monkeypatch.setattr(ladder_mod.runner, "search_or_resume", search)
    monkeypatch.setattr(ladder_mod.verifying, "verify", verify)
    monkeypatch.setattr(ladder_mod, "finished", lambda records: False)
    monkeypatch.setattr(ladder_mod, "time_left_line", lambda left: "")
    monkeypatch.setattr(ladder_mod, "time_left", lambda *a, **k: {})
    cfg = LadderConfig(name="lad", runs_dir=str(tmp_path), points=POINTS, profiles=(), seeds=2, lr_calibration="off")
    ladder_mod.start_ladder(cfg, progress=progress)
    names = [spec.name for spec in cfg.specs]
    assert asked == [(phase, name, progress) for name in names for phase in ("search", "verify")]
    out = capsys.readouterr().out
    assert ("ladder lad: point 1/2" in out) is progress
