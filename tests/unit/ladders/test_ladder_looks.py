"""`ladder --looks K`: every point's verification is group-sequential (verify --looks K), the
candidates a look decides stop training. Checked here: the option is refused in one line where
verify would refuse it, kept through ladder.yaml, and handed to each point's verify; the run end to
end is in tests/integration/test_ladder.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tlmsearch.cli import main
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.tuning import ladder as ladder_mod

POINTS = ("tiny:n_layers=4@0.25", "tiny:n_layers=4,d_model=48,n_heads=3,base_width=96@0.25")


def config(tmp_path: Path, **kw: Any) -> LadderConfig:
    base = dict(name="lad", runs_dir=str(tmp_path), points=POINTS, profiles=(), seeds=0, lr_calibration="off")
    return LadderConfig(**{**base, **kw})


def test_looks_are_kept_and_checked(tmp_path: Path) -> None:
    cfg = config(tmp_path, looks=3, max_seeds=8)
    assert cfg.verify_looks == 3 and LadderConfig.from_dict(cfg.to_dict()) == cfg
    assert config(tmp_path).verify_looks is None  # 0: one look at the end, as before
    for bad in (1, -1, 21, True):
        with pytest.raises(
            ConfigError, match=rf"looks={bad!r}: allowed 0 \(one look at the end, the default\) or 2 to 20"
        ):
            config(tmp_path, looks=bad)
    # 3 looks need 4 deciding seeds; a cap of 6 with a pilot of 3 leaves 3
    with pytest.raises(ConfigError, match=r"looks=3 needs at least 4 deciding seeds.*max_seeds >= 7") as err:
        config(tmp_path, looks=3, max_seeds=6)
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=r"looks=3 with seeds=3 would take only 2 look\(s\)"):
        config(tmp_path, looks=3, seeds=3)


def test_the_command_line_refuses_a_bad_looks_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["ladder", "run", "--points", *POINTS, "--seeds", "auto", "--looks", "1", "--runs-dir", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "looks" in err, err
    assert not any(tmp_path.iterdir())


def test_each_point_verifies_with_the_looks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, Any, Any]] = []

    def verify(run_dir: Path, **kw: Any) -> SimpleNamespace:
        asked.append((Path(run_dir).name, kw["looks"], kw["seeds"]))
        return SimpleNamespace(verdicts=[], new_records=[])

    monkeypatch.setattr(ladder_mod.runner, "search_or_resume", lambda cfg, sub, **kw: None)
    monkeypatch.setattr(ladder_mod.verifying, "verify", verify)
    monkeypatch.setattr(ladder_mod, "finished", lambda records: True)
    monkeypatch.setattr(ladder_mod, "time_left_line", lambda left: "")
    monkeypatch.setattr(ladder_mod, "time_left", lambda *a, **k: {})
    cfg = config(tmp_path, looks=2, max_seeds=6)
    ladder_mod.start_ladder(cfg, progress=False)
    assert [(looks, seeds) for _, looks, seeds in asked] == [(2, "auto"), (2, "auto")]
