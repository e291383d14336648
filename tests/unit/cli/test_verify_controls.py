"""The literature's shapes by name on the command line, resolved without training: `verify
--controls`, `compare --families` and `profiles --family` take profile texts and the set
`literature`; a bad one ends the command with one line before anything trains."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from analysis_fakes import search_records, write_run

from tlmsearch.analysis.plan import CONTROLS
from tlmsearch.cli import main
from tlmsearch.cli.verify import verify_controls
from tlmsearch.configs.presets import preset
from tlmsearch.configs.study import STUDY_CONTROLS, StudyConfig
from tlmsearch.core.base import DataConfig
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import LITERATURE, ProfileSpec
from tlmsearch.studies.files import STUDY_CONFIG

# the literature's shapes verify does not already re-train by default (the bowtie it does)
NEW = tuple(t for t in LITERATURE if t not in CONTROLS)


def _fake_verify(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def fake(run_dir: Any, **kwargs: Any) -> SimpleNamespace:
        seen.update(kwargs, called=True)
        return SimpleNamespace(
            planned=[], reused=0, new_records=[], seeds=[4], pilot=[], verdicts=[], sequential=None, rate_check=[]
        )

    monkeypatch.setattr("tlmsearch.tuning.verify.verify", fake)
    return seen


def test_verify_controls_adds_the_literature_to_the_default_controls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write_run(tmp_path / "run", search_records())
    seen = _fake_verify(monkeypatch)
    assert main(["verify", str(run), "--controls", "literature", "--no-report", "--quiet"]) == 0
    assert seen["controls"] == (*CONTROLS, *NEW)
    assert [ProfileSpec.parse(t).family for t in NEW] == ["openelm", "reverse", "frame", "crown", "middle"]
    seen.clear()
    assert main(["verify", str(run), "--controls", "crown", "literature", "groups:late", "--no-report"]) == 0
    assert seen["controls"] == (*CONTROLS, "crown", *NEW, "groups:late")


def test_verify_controls_in_a_study_add_to_the_studys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    study = tmp_path / "st"
    study.mkdir()
    StudyConfig.from_flat(dict(name="st", archs=("transformer",), preset="tiny", data=DataConfig(corpus="pydoc"))).save(
        study / STUDY_CONFIG
    )
    write_run(study / "transformer", search_records())
    seen = _fake_verify(monkeypatch)
    assert main(["verify", str(study / "transformer"), "--controls", "literature", "--no-report", "--quiet"]) == 0
    assert seen["controls"] == (*STUDY_CONTROLS, *NEW)


@pytest.mark.parametrize(
    ("control", "message"),
    [
        ("crown:peak=0.1", "crown: peak=0.1 must be > max(start, end) = 0.5"),
        ("literatur", "unknown profile family 'literatur'"),
        ("middle:fraction=2", "middle: fraction=2.0 must lie in (0, 1]"),
    ],
)
def test_a_bad_control_ends_verify_before_anything_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], control: str, message: str
) -> None:
    run = write_run(tmp_path / "run", search_records())
    seen = _fake_verify(monkeypatch)
    assert main(["verify", str(run), "--controls", "literature", control, "--no-report"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "called" not in seen


def test_verify_controls_without_names_keeps_the_default() -> None:
    assert verify_controls(None) is None and verify_controls([]) is None
    assert verify_controls(["literature"], ["uniform"]) == ("uniform", *LITERATURE)


def test_compare_expands_the_literature_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake(profiles: list[str], **kwargs: Any) -> SimpleNamespace:
        seen["profiles"] = profiles
        return SimpleNamespace(records=[], profiles=profiles, seeds=[0, 1], verdicts=[], run_dir=tmp_path)

    monkeypatch.setattr("tlmsearch.api.compare", fake)
    assert main(["compare", "--families", "uniform", "cosine", "literature", "--preset", "tiny", "--quiet"]) == 0
    assert seen["profiles"] == ["uniform", "cosine", *LITERATURE]


def test_profiles_shows_the_literature_at_the_exact_budget(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles", "--preset", "cpu-xs", "--family", "literature", "--family", "uniform", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    total = preset("cpu-xs").budget().total
    assert [r["profile"] for r in out["profiles"]][:6] == [str(ProfileSpec.parse(t)) for t in LITERATURE]
    assert all(sum(r["widths"]) == total for r in out["profiles"])
    with pytest.raises(SystemExit):
        main(["profiles", "--help"])
    text = capsys.readouterr().out
    assert all(f"  {name}:" in text for name in ("openelm", "reverse", "frame", "crown", "middle"))


def test_a_study_writes_the_literature_set_out_in_its_config() -> None:
    cfg = StudyConfig(controls=("literature", "groups:third=late"))
    assert cfg.controls == (*LITERATURE, "groups:third=late")
    assert StudyConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="crown: peak=0.2 must be > max"):
        StudyConfig(controls=("crown:peak=0.2",))


def test_the_plan_expands_a_set_name_for_python_callers() -> None:
    from analysis_fakes import record

    from tlmsearch.analysis.plan import choose_profiles
    from tlmsearch.profiles import Budget

    recs = [record("t1", "cosine:start=1.4,end=0.6", 2.0, budget=Budget(n_layers=4, base_width=32, multiple_of=8))]
    names = [name for _, _, name in choose_profiles(recs, top_k=1, controls=("literature",))]
    assert names == [None, "cosine", "uniform", *(str(ProfileSpec.parse(t)) for t in LITERATURE)]


def test_a_control_the_runs_family_cannot_build_ends_verify_before_anything_trains(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`verify --controls joint` on a Titans run: the set's whole-block bowtie is one line, exit 2,
    instead of failed runs in the verification; its other points are built."""
    from joint_runs import CFG, joint_run

    from tlmsearch.configs.verify import check_controls_build
    from tlmsearch.profiles import JOINT_POINTS

    titans = CFG.replace(arch="titans")
    check_controls_build(titans, [t for t in JOINT_POINTS if "block" not in t])
    run = joint_run(tmp_path / "run")
    titans.save(run / "search.yaml")
    assert main(["verify", str(run), "--controls", "joint", "--seeds", "2", "--no-report"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert (
        "controls: profile joint:mode=block,ratio=0.3,position=0.75 moves the block width, which arch='titans'" in err
    )


@pytest.mark.parametrize("arch", ["titans", "hope_attention"])
def test_compare_refuses_a_profile_the_family_cannot_build_before_anything_exists(
    arch: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`compare` of a whole-block joint profile on a family with one residual width: one line
    naming the profile and what the family allows, exit 2, no run directory (it trained one
    failed run per seed before); the same profiles on the Transformer pass the check."""
    from tlmsearch.configs.resolve import check_profiles_build
    from tlmsearch.configs.search import SearchConfig

    block = "joint:mode=block,ratio=0.3,position=0.75"
    runs = tmp_path / "runs"
    args = ["compare", "--arch", arch, "--preset", "tiny", "--families", "uniform", block, "--runs-dir", str(runs)]
    assert main([*args, "--seeds", "2", "--steps", "2", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "block width" in err and arch in err, err
    assert not runs.exists() or not any(runs.iterdir())
    cfg = SearchConfig(arch="transformer", preset="tiny")
    check_profiles_build(cfg, [ProfileSpec.parse(t) for t in ("uniform", block)], what="profiles")
    with pytest.raises(ConfigError, match=r"^profiles: .*"):
        check_profiles_build(cfg.replace(arch=arch), [ProfileSpec.parse(block)], what="profiles")


def test_compare_refuses_a_joint_profile_the_budget_cannot_balance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole-block bowtie on 170m's 12 layers asks block widths the MLP steps cannot balance:
    `compare` says so in one line naming the profile, exit 2, before a run directory exists."""
    block = "joint:mode=block,ratio=0.3,position=0.75"
    runs = tmp_path / "runs"
    args = ["compare", "--preset", "170m", "--families", "uniform", block, "--seeds", "2", "--steps", "2"]
    small = ["--batch-size", "1", "--model", "seq_len=64", "--eval-windows", "1"]  # under any memory check
    assert main([*args, *small, "--runs-dir", str(runs), "--quiet", "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "profile " + block in err and "cannot be balanced" in err, err
    assert not runs.exists() or not any(runs.iterdir())
