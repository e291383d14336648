"""Hostile input, minor findings: a profile given twice in two spellings, contradicting or
doubled flags, a bad value in a run's search.yaml, numbers float() reads but a person does not
write, the allowed objectives, a --space that is no .py file, --model family= in compare,
plan's --arch/--steps/--tokens, export's --divisor and profiles' --arch. Each ends in one line,
exit status 2, no traceback; nothing here trains or starts Ray."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from analysis_fakes import search_records, write_run

import tlmsearch
from tlmsearch.cli import main
from tlmsearch.configs.search import SearchConfig, load_run_config
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.profiles import ProfileSpec

SEARCH = ["search", "--preset", "tiny", "--corpus", "pydoc", "--steps", "2", "--trials", "2"]
SEARCH += ["--noise-seeds", "0", "--dry-run", "--quiet"]
COMPARE = ["compare", "--preset", "tiny", "--corpus", "pydoc", "--steps", "2", "--seeds", "2", "--quiet"]


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], *expected: str) -> str:
    rc = main(argv)
    captured = capsys.readouterr()
    err = captured.err
    assert rc == 2, (rc, captured.out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for text in expected:
        assert text in err, err
    return err


@pytest.fixture
def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("training started")

    monkeypatch.setattr("tlmsearch.tuning.compare.run_fixed", refuse)  # separate trials and packs alike


# ----------------------------------------------------------------------------- 1: one profile, two spellings


@pytest.mark.parametrize(
    ("families", "expected"),
    [
        (["cosine:start=1.5,end=0.5", "cosine"], ["'cosine:start=1.5,end=0.5' and 'cosine'"]),
        (["cosine", "cosine:end=0.5,start=1.50"], ["'cosine' and 'cosine:end=0.5,start=1.50'"]),
        (["groups:early", "uniform", "groups:third=early,factor=2"], ["'groups:early' and"]),
        (["knots:k0=1,k1=2", "knots:k1=2.0,k0=1"], ["'knots:k0=1,k1=2' and 'knots:k1=2.0,k0=1'"]),
        (["uniform", "uniform"], ["'uniform' twice"]),
    ],
)
def test_compare_refuses_one_profile_in_two_spellings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_training: None, families: list[str], expected: list[str]
) -> None:
    runs = tmp_path / "runs"
    argv = [*COMPARE, "--runs-dir", str(runs), "--name", "c", "--families", *families]
    _refused(argv, capsys, "repeat a profile", "give each profile once", *expected)
    assert not runs.exists()


def test_compare_api_refuses_two_spellings_too(tmp_path: Path, no_training: None) -> None:
    with pytest.raises(UserError, match=r"'cosine' and 'cosine:start=1.5', both cosine:start=1.5,end=0.5"):
        tlmsearch.compare(["cosine", "cosine:start=1.5"], preset="tiny", seeds=2, runs_dir=str(tmp_path))


# ----------------------------------------------------------------------------- 2: --no-baselines with --baseline


def test_search_refuses_no_baselines_with_a_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    _refused([*SEARCH, "--no-baselines", "--baseline", "uniform"], capsys, "--no-baselines and --baseline uniform")
    assert main([*SEARCH, "--no-baselines"]) == 0
    assert main([*SEARCH, "--baseline", "uniform"]) == 0


# ----------------------------------------------------------------------------- 3: a bad search.yaml names its file


@pytest.fixture
def bad_run(tmp_path: Path) -> Path:
    run = write_run(tmp_path / "run", search_records())
    config = run / "search.yaml"
    config.write_text(config.read_text() + "trials: abc\n")
    return run


@pytest.mark.parametrize("command", ["status", "export"])
def test_a_bad_value_in_a_runs_search_yaml_names_the_file(
    bad_run: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    _refused([command, str(bad_run)], capsys, f"{bad_run / 'search.yaml'}: trials: expected an integer, got 'abc'")


def test_load_and_search_config_name_the_file(
    bad_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bad_run / "search.yaml"
    with pytest.raises(ConfigError, match=rf"^{path}: trials: expected an integer"):
        load_run_config(path)
    with pytest.raises(ConfigError, match=rf"^{path}: trials: expected an integer"):
        tlmsearch.load(bad_run)
    _refused([*SEARCH, "--config", str(path)], capsys, f"{path}: trials: expected an integer")


# ----------------------------------------------------------------------------- 4: plain decimal numbers only


@pytest.mark.parametrize("value", ["1_0", "\uff11.5", "1.\u0665", " 1.5e0_0"])
def test_profile_numbers_are_plain_ascii_decimals(value: str) -> None:
    with pytest.raises(ConfigError, match=r"is not a plain decimal number; write ASCII digits"):
        ProfileSpec.parse(f"cosine:start={value},end=0.5")


@pytest.mark.parametrize(("value", "number"), [("1.5", 1.5), ("+.5e1", 5.0), ("2.", 2.0), ("-1E-1", -0.1)])
def test_plain_decimals_still_parse(value: str, number: float) -> None:
    assert ProfileSpec.parse(f"power:exponent={value}").params["exponent"] == number


def test_cli_refuses_an_underscored_profile_number(capsys: pytest.CaptureFixture[str]) -> None:
    _refused(["profiles", "--preset", "tiny", "--family", "cosine:start=1_0"], capsys, "start='1_0'", "plain decimal")


# ----------------------------------------------------------------------------- 5: the objectives offered


@pytest.mark.parametrize("objectives", ["val_loss,nosuch", ""])
def test_objectives_errors_list_only_what_a_search_accepts(capsys: pytest.CaptureFixture[str], objectives: str) -> None:
    err = _refused([*SEARCH, "--objectives", objectives], capsys, "val_loss, params, train_speed, infer_speed")
    assert "tokens_per_s" not in err


def test_objectives_refuse_empty_and_doubled_items(capsys: pytest.CaptureFixture[str]) -> None:
    _refused([*SEARCH, "--objectives", "val_loss,,train_speed"], capsys, "has an empty item")
    _refused([*SEARCH, "--objectives", "val_loss,val_loss"], capsys, "names val_loss more than once")


def test_an_old_run_with_tokens_per_s_still_loads() -> None:
    assert SearchConfig(objectives=("val_loss", "tokens_per_s")).objectives[1] == "tokens_per_s"


# ----------------------------------------------------------------------------- 6: a --space that is no .py file


def test_a_space_that_is_no_py_file_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "three.txt").write_text("abc")
    (tmp_path / "folder").mkdir()
    for given in (str(tmp_path / "three.txt"), "three.txt"):  # a path, and a bare name in the working folder
        monkeypatch.chdir(tmp_path)
        _refused([*SEARCH, "--space", given], capsys, "three.txt is not a .py file", "defines sample(trial, n_layers)")
    _refused([*SEARCH, "--space", str(tmp_path / "folder")], capsys, "is a folder", "a Python file ending in .py")
    (tmp_path / "taper").write_text("abc")  # a file named like a built-in space: the built-in wins
    assert main([*SEARCH, "--space", "taper"]) == 0


# ----------------------------------------------------------------------------- 7: --model family= in compare


def test_compare_model_family_points_to_families(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_training: None
) -> None:
    argv = [*COMPARE, "--runs-dir", str(tmp_path / "runs"), "--families", "uniform", "cosine"]
    _refused(
        [*argv, "--model", "family=cosine"], capsys, "model.family is not a model override of compare", "--families"
    )
    _refused([*argv, "--model", "nosuch=1"], capsys, "unknown ModelConfig field(s) nosuch; allowed:", "n_layers")


# ----------------------------------------------------------------------------- 8, 9: plan's --arch, --steps/--tokens


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--arch", "transformer,transformer"], "names transformer more than once"),
        (["--arch", "transformer,,titans"], "has an empty item"),
        (["--arch", "transformer,"], "has an empty item"),
        (["--steps", "100", "--tokens", "1e6"], "give --steps or --tokens, not both"),
        (["--verify-steps", "100", "--verify-tokens", "1e6"], "give --verify-steps or --verify-tokens, not both"),
    ],
)
def test_plan_refuses_doubled_or_empty_archs_and_steps_with_tokens(
    capsys: pytest.CaptureFixture[str], flags: list[str], expected: str
) -> None:
    _refused(["plan", "--preset", "tiny", *flags], capsys, expected)


def test_plan_still_takes_a_list_of_archs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--preset", "tiny", "--arch", " transformer, titans ", "--tokens", "1e6"]) == 0
    assert "titans" in capsys.readouterr().out


# ----------------------------------------------------------------------------- 10: export --divisor


def test_export_refuses_a_divisor_its_format_ignores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", search_records())
    for fmt in ("native", "widths"):
        _refused(["export", str(run), "--format", fmt, "--divisor", "7"], capsys, f"--format {fmt}", "only openelm")
    assert not (run / "export").exists()


# ----------------------------------------------------------------------------- 11: profiles --arch


def test_profiles_refuses_an_unknown_arch_without_throughput(capsys: pytest.CaptureFixture[str]) -> None:
    _refused(["profiles", "--preset", "tiny", "--arch", "nosuch"], capsys, "--arch='nosuch' is not allowed")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--preset", "tiny", "--repeats", "0"], "--repeats=0"),
        (["--preset", "tiny", "--arch", "nosuch"], "--arch='nosuch'"),
        (["--layers", "2", "--base-width", "64"], "--throughput needs --preset"),
    ],
)
def test_profiles_throughput_checks_its_flags_before_the_table(
    capsys: pytest.CaptureFixture[str], flags: list[str], expected: str
) -> None:
    rc = main(["profiles", "--throughput", *flags])
    out, err = capsys.readouterr()
    assert rc == 2 and expected in err and "Traceback" not in err, err
    assert out == ""  # no table printed before the refusal


@pytest.mark.parametrize("archs", ["transformer,,titans", "transformer,titans,", "titans,titans"])
def test_study_archs_refuses_empty_and_repeated_items(archs: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["study", "--archs", archs, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "--archs" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
