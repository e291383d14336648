"""`tlmsearch resume --cpus-per-trial/--gpus-per-trial/--max-concurrent`: every config of a
search, study or ladder takes the new resources, never what a trial trains; refusals change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlmsearch.cli import main
from tlmsearch.configs.search import SearchConfig, load_run_config
from tlmsearch.configs.study import StudyConfig
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.ladders.files import load_config as load_ladder
from tlmsearch.rundir.layout import SEARCH_CONFIG
from tlmsearch.rundir.lock import run_lock
from tlmsearch.studies.files import load_config as load_study
from tlmsearch.tuning.resume_resources import change_resources


def _search(root: Path, name: str = "run", **fields: object) -> Path:
    run = root / name
    run.mkdir(parents=True)
    SearchConfig(name=name, runs_dir=str(root), preset="tiny", trials=2, **fields).save(run / SEARCH_CONFIG)  # type: ignore[arg-type]
    return run


def _study(root: Path) -> Path:
    cfg = StudyConfig.from_flat(
        {"name": "st", "runs_dir": str(root), "archs": ["transformer", "titans"], "preset": "tiny", "trials": 2}
    )
    study = root / "st"
    study.mkdir(parents=True)
    cfg.save(study / "study.yaml")
    for arch in cfg.archs:
        (study / arch).mkdir()
        cfg.search_config(arch, str(study)).save(study / arch / SEARCH_CONFIG)
    (study / "transfer-titans").mkdir()
    cfg.search_config("titans", str(study)).replace(name="transfer-titans").save(
        study / "transfer-titans" / SEARCH_CONFIG
    )
    return study


def _ladder(root: Path) -> Path:
    cfg = LadderConfig(points=("tiny@5", "tiny:n_layers=4@5"), runs_dir=str(root), name="ld")
    ladder = root / "ld"
    ladder.mkdir(parents=True)
    cfg.save(ladder / "ladder.yaml")
    for spec, point in zip(cfg.specs, cfg.point_configs(str(ladder)), strict=True):
        (ladder / spec.name).mkdir()
        point.save(ladder / spec.name / SEARCH_CONFIG)
    return ladder


def _files(run: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(run.rglob("*.yaml"))}


def test_a_search_takes_new_resources_and_keeps_its_threads(tmp_path: Path) -> None:
    run = _search(tmp_path)
    lines = change_resources(run, cpus_per_trial=2, max_concurrent=3, gpus_per_trial=None)
    assert lines == [f"{run}: cpus-per-trial 1 -> 2", f"{run}: max-concurrent 0 -> 3"]
    cfg = load_run_config(run / SEARCH_CONFIG)
    assert (cfg.cpus_per_trial, cfg.max_concurrent) == (2, 3)
    assert cfg.train.threads == 1  # the threads its trials trained with (they followed 1 CPU), written out
    assert change_resources(run, cpus_per_trial=2) == [] and change_resources(run) == []
    pinned = _search(tmp_path, "pinned", cpus_per_trial=4.0, train=SearchConfig().train.replace(threads=2))
    change_resources(pinned, cpus_per_trial=1)
    assert load_run_config(pinned / SEARCH_CONFIG).train.threads == 2  # set by the user: kept as it was


def test_a_study_changes_its_template_and_every_phase(tmp_path: Path) -> None:
    study = _study(tmp_path)
    lines = change_resources(study, max_concurrent=2, cpus_per_trial=2)
    assert len(lines) == 2
    cfg = load_study(study)
    assert (cfg.search.max_concurrent, cfg.search.cpus_per_trial, cfg.search.train.threads) == (2, 2, 1)
    for sub in ("transformer", "titans", "transfer-titans"):
        s = load_run_config(study / sub / SEARCH_CONFIG)
        assert (s.max_concurrent, s.cpus_per_trial, s.train.threads) == (2, 2, 1), sub
    assert cfg.search_config("titans").max_concurrent == 2  # the phases a resume derives anew take them too


def test_a_ladder_changes_its_points_and_refuses_max_concurrent(tmp_path: Path) -> None:
    ladder = _ladder(tmp_path)
    before = _files(ladder)
    with pytest.raises(ConfigError, match="max_concurrent: a ladder has no such setting"):
        change_resources(ladder, max_concurrent=2)
    assert _files(ladder) == before
    change_resources(ladder, cpus_per_trial=2)
    assert load_ladder(ladder).cpus_per_trial == 2 and load_ladder(ladder).train.threads == 1
    points = [p for p in ladder.iterdir() if (p / SEARCH_CONFIG).is_file()]
    assert len(points) == 2 and all(load_run_config(p / SEARCH_CONFIG).cpus_per_trial == 2 for p in points)


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"gpus_per_trial": 0.5}, "would move its trials between CPUs and GPUs"),
        ({"cpus_per_trial": 0}, "cpus_per_trial=0.0 must be > 0"),
        ({"max_concurrent": -1}, "max_concurrent=-1 must be >= 0"),
        ({"threads": 4}, "threads: not a resource setting"),
    ],
)
def test_refusals_change_nothing(tmp_path: Path, changes: dict, needle: str) -> None:
    study = _study(tmp_path)
    before = _files(study)
    with pytest.raises(ConfigError) as err:
        change_resources(study, **changes)
    assert needle in str(err.value)
    assert _files(study) == before


def test_a_run_in_use_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    study = _study(tmp_path)
    before = _files(study)
    with run_lock(study / "titans"), pytest.raises(ConfigError, match="is in use by"):
        change_resources(study, cpus_per_trial=2)
    assert _files(study) == before


def test_cli_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ladder = _ladder(tmp_path)
    assert main(["resume", str(ladder), "--max-concurrent", "2"]) == 2
    assert "a ladder has no such setting" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # not a flag of a ladder's own resume
        main(["ladder", "resume", str(ladder), "--max-concurrent", "2"])
    assert stop.value.code == 2 and "--max-concurrent" in capsys.readouterr().err
    assert main(["resume", str(tmp_path / "missing"), "--cpus-per-trial", "2"]) == 2
    assert "not a search, study or ladder run directory" in capsys.readouterr().err
