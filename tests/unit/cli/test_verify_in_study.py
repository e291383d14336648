"""`tlmsearch verify` in an architecture's directory of a study verifies as the study did (its
profiles, controls, seeds and levels) unless told otherwise, so a verification can be extended
with more seeds; elsewhere the plain defaults hold."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from analysis_fakes import search_records, write_run
from verify_fakes import verify_kwargs

from tlmsearch.analysis.plan import CONTROLS
from tlmsearch.cli import main
from tlmsearch.configs.study import STUDY_CONTROLS, StudyConfig
from tlmsearch.core.base import DataConfig
from tlmsearch.errors import ConfigError
from tlmsearch.studies.files import STUDY_CONFIG, verify_options


def _study(tmp_path: Path) -> Path:
    study = tmp_path / "st"
    study.mkdir()
    cfg = StudyConfig.from_flat(dict(name="st", archs=("transformer",), preset="tiny", model={"n_layers": 4}, top_k=2,
                      max_seeds=8, pilot_seeds=3, margin=0.02, alpha=0.1, data=DataConfig(corpus="pydoc")))  # fmt: skip
    cfg.save(study / STUDY_CONFIG)
    write_run(study / "transformer", search_records())
    return study


def test_verify_in_a_study_takes_the_studys_options_unless_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    arch = _study(tmp_path) / "transformer"
    got = verify_kwargs(monkeypatch, [str(arch), "--max-seeds", "40"])
    assert got["max_seeds"] == 40  # given: extends the study's cap of 8
    assert (got["top_k"], got["seeds"], got["pilot_seeds"]) == (2, "auto", 3)  # the study's
    assert (got["margin"], got["alpha"]) == (0.02, 0.1)
    assert tuple(got["controls"]) == STUDY_CONTROLS and got["named_controls"] == {}
    assert got["rate_check"] == 6  # the study's learning-rate check (on by default in a study)
    assert "an architecture of a study" in capsys.readouterr().out
    monkeypatch.chdir(arch)  # `tlmsearch verify .` inside the architecture's folder
    assert verify_kwargs(monkeypatch, [".", "--max-seeds", "40"])["top_k"] == 2
    got = verify_kwargs(monkeypatch, [str(arch), "--top-k", "4", "--margin", "0.03", "--seeds", "5"])
    assert (got["top_k"], got["seeds"], got["margin"], got["max_seeds"]) == (4, 5, 0.03, 8)
    assert verify_kwargs(monkeypatch, [str(arch), "--rate-check", "off"])["rate_check"] == 0


def test_verify_outside_a_study_keeps_its_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = write_run(tmp_path / "plain", search_records())
    assert verify_options(plain) is None
    got = verify_kwargs(monkeypatch, [str(plain)])
    assert (got["top_k"], got["seeds"], got["max_seeds"], got["pilot_seeds"]) == (5, "auto", 20, 3)
    assert got["rate_check"] == 0  # verify's own default: no learning-rate check
    assert verify_kwargs(monkeypatch, [str(plain), "--rate-check", "4"])["rate_check"] == 4
    assert "controls" not in got  # verify's own default: analysis.plan.CONTROLS
    # a study's transfer folder or random companion is not an architecture's search
    study = _study(tmp_path)
    assert verify_options(study / "transfer-transformer") is None and verify_options(study) is None
    assert set(CONTROLS) < set(STUDY_CONTROLS)


def test_a_verify_in_a_finished_study_phase_records_its_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tlmsearch.studies.files import read_state, set_phase

    study = _study(tmp_path)
    verdict = SimpleNamespace(
        outcome="near_optimal", headline="h", group="g", confidence=0.95, table=[], rank_correlation=None
    )

    def fake(run_dir: Any, **kwargs: Any) -> SimpleNamespace:
        return SimpleNamespace(
            planned=[],
            reused=0,
            new_records=[],
            seeds=[4],
            pilot=[],
            verdicts=[verdict],
            sequential=None,
            rate_check=[],
        )

    monkeypatch.setattr("tlmsearch.tuning.verify.verify", fake)
    set_phase(study, "transformer/verify", "running")  # the study's driver owns a phase it has not finished
    assert main(["verify", str(study / "transformer"), "--no-report", "--quiet"]) == 0
    assert "outcome" not in read_state(study)["phases"]["transformer/verify"]
    set_phase(study, "transformer/verify", "done", outcome="inconclusive")
    assert main(["verify", str(study / "transformer"), "--no-report", "--quiet"]) == 0
    phase = read_state(study)["phases"]["transformer/verify"]
    assert (phase["status"], phase["outcome"]) == ("done", "near_optimal") and "started" in phase


@pytest.mark.parametrize("value", ["1", "x", "-3", "1001", "2.5"])
def test_a_bad_rate_check_is_one_line_before_anything_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    monkeypatch.setattr("tlmsearch.tuning.verify.verify", lambda *a, **k: pytest.fail("verify must not start"))
    plain = write_run(tmp_path / "plain", search_records())
    assert main(["verify", str(plain), "--rate-check", value, "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "--rate-check" in err and "off" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_study_without_the_rate_check_runs_none(tmp_path: Path) -> None:
    arch = _study(tmp_path) / "transformer"
    StudyConfig.load(arch.parent / STUDY_CONFIG).replace(rate_check=0).save(arch.parent / STUDY_CONFIG)
    options = verify_options(arch)
    assert options is not None and options["rate_check"] == 0
    with pytest.raises(ConfigError, match="rate_check=1"):
        StudyConfig(rate_check=1)


def test_a_study_verifies_at_its_deciding_length_unless_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A study that screens in tokens per parameter (the default 5) verifies at its
    `verify_tokens_per_param` (default 20; 0 = the searches' length); `tlmsearch verify` in its
    architecture's folder does the same unless --steps or --tokens-per-param say otherwise; a
    study given in steps verifies at its steps."""
    from tlmsearch.core.base import TrainConfig

    arch = _study(tmp_path) / "transformer"
    assert verify_options(arch)["train"] == {"tokens_per_param": 20.0}  # type: ignore[index]
    got = verify_kwargs(monkeypatch, [str(arch)])
    assert got["train"] == {"tokens_per_param": 20.0} and got["steps"] is None
    got = verify_kwargs(monkeypatch, [str(arch), "--tokens-per-param", "8"])
    assert got["train"]["tokens_per_param"] == 8.0
    got = verify_kwargs(monkeypatch, [str(arch), "--steps", "30"])
    assert got["steps"] == 30 and got["train"].get("tokens_per_param", 0.0) == 0.0
    cfg = StudyConfig.load(arch.parent / STUDY_CONFIG)
    cfg.replace(verify_tokens_per_param=0.0).save(arch.parent / STUDY_CONFIG)
    assert verify_options(arch)["train"] == {"tokens_per_param": 5.0}  # type: ignore[index]
    cfg.with_fields(train=TrainConfig(steps=40)).save(arch.parent / STUDY_CONFIG)
    assert "train" not in verify_options(arch)  # type: ignore[operator]
    with pytest.raises(ConfigError, match="verify_tokens_per_param"):
        StudyConfig(verify_tokens_per_param=-1.0)
