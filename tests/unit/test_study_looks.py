"""`study --looks K`: every architecture's verification is group-sequential (verify --looks K), as
`ladder --looks` does for each point. Checked here: refused in one line where verify would refuse
it, kept through study.yaml (and left out of it at 0, as studies before it wrote it), handed to each
verification and to a later `tlmsearch verify` of an architecture's folder, shown by `status`; a
tiny study end to end is in tests/integration/test_study.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from analysis_fakes import search_records, write_run
from study_fakes import tiny_study
from verify_fakes import verify_kwargs

from tlmsearch.cli import main
from tlmsearch.configs.study import StudyConfig
from tlmsearch.errors import ConfigError
from tlmsearch.studies.files import STUDY_CONFIG, verify_options


def planned(tmp_path: Path, **kw: Any) -> StudyConfig:
    """The tiny study with planned seeds: a pilot of 2, at most 5 seeds (3 deciding)."""
    return tiny_study(tmp_path, **{"seeds": 0, "pilot_seeds": 2, "max_seeds": 5, **kw})


def test_looks_are_kept_checked_and_left_out_at_zero(tmp_path: Path) -> None:
    cfg = planned(tmp_path, looks=2)
    assert cfg.verify_looks == 2 and cfg.to_dict()["looks"] == 2
    assert StudyConfig.from_dict(cfg.to_dict()) == cfg
    plain = planned(tmp_path)
    assert plain.verify_looks is None and "looks" not in plain.to_dict()  # as studies before it wrote it
    assert StudyConfig.from_dict(plain.to_dict()) == plain
    for bad in (1, -1, 21):
        with pytest.raises(
            ConfigError, match=rf"looks={bad}: allowed 0 \(one look at the end, the default\) or 2 to 20"
        ):
            planned(tmp_path, looks=bad)
    for bad in (True, "2", 2.5):
        with pytest.raises(ConfigError, match=r"looks: expected an integer"):
            planned(tmp_path, looks=bad)
    # 3 looks need 4 deciding seeds: a cap of 5 after a pilot of 2 leaves 3
    with pytest.raises(ConfigError, match=r"looks=3 needs at least 4 deciding seeds.*max_seeds >= 6") as err:
        planned(tmp_path, looks=3)
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=r"looks=3 with seeds=3 would take only 2 look\(s\)"):
        planned(tmp_path, looks=3, seeds=3)
    assert planned(tmp_path, looks=3, max_seeds=6).verify_looks == 3


def test_the_command_line_refuses_a_bad_looks_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["study", "--archs", "transformer", "--preset", "tiny", "--model", "n_layers=4", "--runs-dir",
            str(tmp_path), "--name", "st", "--looks", "1", "--yes"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "looks=1" in err, err
    assert not any(tmp_path.iterdir())


def _study(tmp_path: Path, **kw: Any) -> Path:
    study = tmp_path / "st"
    study.mkdir()
    planned(tmp_path, archs=("transformer",), **kw).save(study / STUDY_CONFIG)
    write_run(study / "transformer", search_records())
    return study


def test_each_verification_and_a_later_verify_take_the_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    arch = _study(tmp_path, looks=2) / "transformer"
    assert verify_options(arch)["looks"] == 2  # what the study's own verification hands verify
    got = verify_kwargs(monkeypatch, [str(arch)])
    assert got["looks"] == 2 and (got["seeds"], got["pilot_seeds"], got["max_seeds"]) == ("auto", 2, 5)
    assert "pack off, looks 2\n" in capsys.readouterr().out  # says it kept the study's design
    assert verify_kwargs(monkeypatch, [str(arch), "--looks", "3", "--max-seeds", "6"])["looks"] == 3


def test_a_study_without_looks_verifies_in_one_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    arch = _study(tmp_path) / "transformer"
    assert verify_options(arch)["looks"] is None
    assert verify_kwargs(monkeypatch, [str(arch)])["looks"] is None
    assert "pack off\n" in capsys.readouterr().out  # the kept options end there: no looks among them


def test_status_says_the_design(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    study = _study(tmp_path, looks=2)
    assert main(["status", str(study)]) == 0
    out = capsys.readouterr().out
    assert "study st" in out and "each verified in 2 group-sequential looks" in out, out


def test_the_most_looks_a_study_takes(tmp_path: Path) -> None:
    """20 looks (the most) over 21 deciding seeds after a pilot of 2: kept."""
    assert planned(tmp_path, looks=20, max_seeds=23).verify_looks == 20
