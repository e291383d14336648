"""Hostile input to search, verify, compare, resume and quickstart: each ends in one clear line
(exit status 2, no traceback, nothing started) or is counted correctly; nothing here starts Ray."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from analysis_fakes import search_records, write_run
from record_fakes import build_record

import tlmsearch
from tlmsearch.cli import main
from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.profiles.spaces import builtin_spaces, load_space
from tlmsearch.rundir import records as records_module
from tlmsearch.rundir.records import SEARCH_KINDS, RecordLog, damage_note, read_records, read_records_checked
from tlmsearch.tuning import searcher
from tlmsearch.tuning.searcher import DefineProfile

SEARCH = ["search", "--preset", "tiny", "--corpus", "pydoc", "--steps", "2", "--trials", "2", "--no-baselines"]
SEARCH += ["--noise-seeds", "0"]


def _space(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(
        f'"""{name}."""\nfrom tlmsearch.profiles import ProfileSpec\n\n\ndef sample(trial, n_layers):\n{body}\n'
    )
    return path


class _Started(AssertionError):
    """The search got past its checks (to its run directory, then Ray)."""


@pytest.fixture
def no_search(monkeypatch: pytest.MonkeyPatch) -> list[SearchConfig]:
    """A search that gets past its checks (to `run_root`, its first step towards the run
    directory and Ray) records its config and fails the test at once."""
    started: list[SearchConfig] = []

    def refuse(cfg: SearchConfig, *args: Any, **kwargs: Any) -> Any:
        started.append(cfg)
        raise _Started("the search started")

    monkeypatch.setattr("tlmsearch.tuning.runner.run_root", refuse)
    monkeypatch.setattr("tlmsearch.tuning.runner.announce", lambda *a, **k: None)
    return started


# ----------------------------------------------------------------------------- finding 1: --space files


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("    raise RuntimeError('boom')", "sample() raised RuntimeError: boom"),
        ("    return 42", "sample() returned 42 (int)"),
        ("    return 'cosine'", "sample() returned 'cosine' (str)"),
        ("    return ProfileSpec(family='free', params={'l0': 1.0})", "cannot hold"),
        ("    raise SystemExit(3)", "calls sys.exit(3)"),
    ],
)
def test_search_refuses_a_space_whose_sample_fails_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_search: list[SearchConfig], body: str, expected: str
) -> None:
    space = _space(tmp_path, "bad", body)
    runs = tmp_path / "runs"
    rc = main([*SEARCH, "--space", str(space), "--runs-dir", str(runs), "--name", "x"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert str(space.resolve()) in err and expected in err, err
    assert not runs.exists()  # no run directory left behind


def test_dry_run_checks_the_space_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    space = _space(tmp_path, "bad", "    return None")
    assert main([*SEARCH, "--space", str(space), "--dry-run", "--quiet"]) == 2
    assert "sample() returned None" in capsys.readouterr().err


def test_every_builtin_space_passes_the_check() -> None:
    for name in builtin_spaces():
        searcher.check_space_samples(SearchConfig(preset="tiny", space=name))
    searcher.check_space_samples(SearchConfig(preset="tiny", space="knots", base_widths=(32, 256)))


def test_api_search_checks_the_space_and_takes_a_dict(tmp_path: Path, no_search: list[SearchConfig]) -> None:
    bad = _space(tmp_path, "bad", "    raise RuntimeError('boom')")
    with pytest.raises(ConfigError, match=r"bad\.py: sample\(\) raised RuntimeError: boom"):
        tlmsearch.search({"preset": "tiny", "space": str(bad), "runs_dir": str(tmp_path / "runs")})
    assert not no_search
    with pytest.raises(_Started):
        tlmsearch.search({"preset": "tiny", "trials": 3, "runs_dir": str(tmp_path / "runs")})
    assert no_search and no_search[0].trials == 3 and no_search[0].preset == "tiny"
    with pytest.raises(UserError, match="must be a SearchConfig or a dict"):
        tlmsearch.search(["tiny"])  # type: ignore[arg-type]


def _trial(baseline: str | None = None) -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0)).ask()
    if baseline:
        trial.set_user_attr("baseline", baseline)
    return trial


def test_a_space_failing_mid_search_fails_that_trial_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    space = _space(tmp_path, "later", "    raise RuntimeError('boom later')")
    define = DefineProfile(str(space), 4, None)
    config = define(_trial())
    assert config["profile"] == searcher.SPACE_FAILED and "RuntimeError: boom later" in config[searcher.SPACE_ERROR]
    assert "recorded as failed and the search goes on" in capsys.readouterr().err
    with pytest.raises(ConfigError):  # what the trainable does with it: fails at once
        ProfileSpec.parse(config["profile"])
    cfg = SearchConfig(preset="tiny", model={"n_layers": 4}, space=str(space))
    # the worker reports the failure; the driver's record carries the space's error
    record = build_record(cfg, "t1", config, {"failed": 1, "reason": "ConfigError: unknown profile family"})
    assert record.status == "failed" and "sample() raised RuntimeError: boom later" in str(record.reason)
    assert record.profile == {} and searcher.SPACE_ERROR not in record.params
    # so does one Tune ended in error, and one with no result at all
    assert build_record(cfg, "t2", config, None, error="worker died").reason == config[searcher.SPACE_ERROR]
    # a baseline trains itself even when the space fails on it
    assert define(_trial("uniform"))["profile"] == "uniform"
    # a space returning no profile mid-search
    forty_two = DefineProfile(str(_space(tmp_path, "ft", "    return 42")), 4, None)
    assert "returned 42 (int)" in forty_two(_trial())[searcher.SPACE_ERROR]


def test_build_record_survives_a_profile_that_does_not_parse() -> None:
    cfg = SearchConfig(preset="tiny", model={"n_layers": 4})
    record = build_record(cfg, "t", {"profile": "42", "number": 3}, {"failed": 1, "reason": "x"})
    assert record.status == "failed" and record.profile == {} and record.widths == ()


def test_load_space_still_refuses_missing_and_sampleless_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_space(str(tmp_path / "nope.py"))
    (tmp_path / "empty.py").write_text("X = 1\n")
    with pytest.raises(ConfigError, match="defines no function sample"):
        load_space(str(tmp_path / "empty.py"))


# ----------------------------------------------------------------------------- finding 2: seeds


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", search_records())


@pytest.fixture
def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("training started")

    monkeypatch.setattr("tlmsearch.tuning.verify.run_fixed", refuse)  # separate trials and packs alike
    monkeypatch.setattr("tlmsearch.tuning.compare.run_fixed", refuse)  # separate trials and packs alike


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--seeds", "1"], "--seeds=1 must be 'auto' or an integer from 2 to 1000: a paired test needs at least 2"),
        (["--seeds", "0"], "--seeds=0 must be 'auto' or an integer from 2 to 1000"),
        (["--seeds", "100000"], "--seeds=100000 must be 'auto' or an integer from 2 to 1000"),
        (["--seeds", "many"], "--seeds='many' must be 'auto' or an integer from 2 to 1000"),
        (["--max-seeds", "100000"], "--max-seeds=100000 must be a positive integer, at most 1000"),
        (["--top-k", "0"], "--top-k=0 must be a positive integer"),
    ],
)
def test_verify_refuses_bad_seed_counts(
    run: Path, capsys: pytest.CaptureFixture[str], no_training: None, flags: list[str], expected: str
) -> None:
    rc = main(["verify", str(run), *flags, "--no-report", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert expected in err, err


def test_compare_refuses_one_seed_before_a_run_directory_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_training: None
) -> None:
    runs = tmp_path / "cmp"
    argv = ["compare", "--preset", "tiny", "--corpus", "pydoc", "--steps", "2", "--runs-dir", str(runs)]
    for seeds, expected in (("1", "a paired test needs at least 2 seeds"), ("1001", "from 2 to 1000")):
        rc = main([*argv, "--families", "cosine", "uniform", "--seeds", seeds, "--name", "c7"])
        err = capsys.readouterr().err
        assert rc == 2 and "Traceback" not in err and f"--seeds={seeds}" in err and expected in err, err
    assert not runs.exists()


def test_api_verify_compare_load_refuse_bad_arguments_clearly(run: Path, no_training: None) -> None:
    with pytest.raises(UserError, match=r"study=None must be a Study .* or the path of a search run directory"):
        tlmsearch.verify(None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"top_k='3' must be a positive integer"):
        tlmsearch.verify(run, top_k="3")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"seeds=1 must be .* a paired test needs at least 2 seeds"):
        tlmsearch.verify(run, seeds=1)
    with pytest.raises(ConfigError, match=r"seeds=1001 must be"):
        tlmsearch.verify(run, seeds=1001)
    with pytest.raises(ConfigError, match=r"seeds='3' must be 'auto' or an integer"):
        tlmsearch.verify(run, seeds="3")
    with pytest.raises(ConfigError, match=r"max_seeds=5000 must be"):
        tlmsearch.verify(run, max_seeds=5000)
    with pytest.raises(ConfigError, match=r"seeds='2' must be an integer from 2 to 1000"):
        tlmsearch.compare(["cosine", "uniform"], seeds="2")
    with pytest.raises(ConfigError, match=r"seeds=1 must be an integer from 2 to 1000: a paired test"):
        tlmsearch.compare(["cosine", "uniform"], seeds=1)
    with pytest.raises(UserError, match=r"profiles='cosine' must be a list of profile texts"):
        tlmsearch.compare("cosine", seeds=2)
    with pytest.raises(UserError, match=r"load: run_dir=None must be the path of a run directory"):
        tlmsearch.load(None)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"resume: run_dir=None"):
        tlmsearch.resume(None)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- finding 3: repeated records

CFG = SearchConfig(
    name="r", preset="tiny", model={"n_layers": 4}, trials=2,
    train=TrainConfig(steps=4, eval_interval=2, warmup_steps=1), data=DataConfig(corpus="pydoc"),
)  # fmt: skip


def _record(trial_id: str, profile: str, number: int, loss: float) -> Any:
    from tlmsearch.configs.resolve import trial_shape

    budget, _, model = trial_shape(CFG, ProfileSpec.parse(profile))
    trained = {"model": model.to_dict(), "train": CFG.train.to_dict(), "data": CFG.data.to_dict()}
    trained["budget"] = budget.to_dict()
    result = {"step": 4, "curve": [{"step": 4, "val_loss": loss}], "trained": trained}
    return build_record(CFG, trial_id, {"profile": profile, "baseline": profile, "number": number}, result)


def _duplicated_run(tmp_path: Path) -> Path:
    """A finished 2-trial search whose trials.jsonl then got its first line twice."""
    run = tmp_path / "copy"
    run.mkdir()
    CFG.save(run / "search.yaml")
    lines = [json.dumps(r.to_dict()) for r in (_record("u1", "uniform", 0, 3.0), _record("c1", "cosine", 1, 2.9))]
    (run / "trials.jsonl").write_text("\n".join([lines[0], lines[0], lines[1]]) + "\n")
    return run


def test_a_repeated_trial_id_counts_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _duplicated_run(tmp_path)
    records, bad = read_records_checked(run)
    assert [r.trial_id for r in records] == ["u1", "c1"] and bad == []
    assert records_module.duplicate_ids(run) == ["u1"]
    note = damage_note(run)
    assert note is not None and "u1" in note and "counted once" in note and "\n" not in note
    RecordLog(run)
    RecordLog(run)  # a resume opens the log several times: one warning
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 trial id(s) appear on more than one line (u1)" in err[0]


def test_resume_sees_the_trial_a_repeated_line_hides(tmp_path: Path) -> None:
    """The file holds uniform twice and cosine never: a resume must not think 2 of 2 trials ended."""
    run = _duplicated_run(tmp_path)
    text = (run / "trials.jsonl").read_text().splitlines()
    (run / "trials.jsonl").write_text("\n".join(text[:2]) + "\n")
    assert sum(r.kind in SEARCH_KINDS for r in read_records(run)) == 1 < CFG.trials


def test_status_report_export_count_a_repeated_trial_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _duplicated_run(tmp_path)
    assert main(["status", str(run)]) == 0
    out, err = capsys.readouterr()
    assert "2/2 ended: 2 complete" in out, out
    assert sum(line.split()[:1] == ["u1"] for line in out.splitlines()) == 2, out  # best list + baselines list
    assert "appear on more than one line" in err
    assert main(["status", str(run), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["counts"]["complete"] == 2
    assert len(tlmsearch.load(run).records) == 2


# ----------------------------------------------------------------------------- finding 4: quickstart


@pytest.mark.parametrize(
    ("flags", "named", "not_named"),
    [
        (["--seeds", "2", "--top-k", "-1"], ["--top-k=-1"], ["--seeds", "--trials", "--steps"]),
        (["--trials", "0"], ["--trials=0"], ["--steps", "--seeds", "--top-k"]),
        (["--steps", "1"], ["--steps=1"], ["--trials", "--seeds", "--top-k"]),
        (["--trials", "1", "--seeds", "1"], ["--trials=1", "--seeds=1"], ["--steps", "--top-k"]),
    ],
)
def test_quickstart_names_only_the_offending_flags(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    named: list[str],
    not_named: list[str],
) -> None:
    monkeypatch.setattr("tlmsearch.search", lambda *a, **k: (_ for _ in ()).throw(AssertionError("search started")))
    assert main(["quickstart", *flags, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for flag in named:
        assert flag in err, err
    for flag in not_named:
        assert flag not in err, err
