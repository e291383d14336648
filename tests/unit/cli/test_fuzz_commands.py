# ruff: noqa: E501  (the case table reads best one case per line)
"""Hostile input for the commands that train, search, compare, report and export.

The table holds the concrete cases of the bad-input report (issue 13) that concern the
commands rather than the profile maths (those are in `test_fuzz_inputs.py`). Each case runs
through the in-process CLI and must end with exit status 2 (or the documented code), exactly
one line on stderr, no traceback, and, where it matters, no run directory left behind (so a
retry with the same name works), Ray never started and nothing written outside the run.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from analysis_fakes import record, write_run

from tlmsearch.cli import main
from tlmsearch.cli.search import EXIT_ALL_FAILED, exit_status

SMALL = ["--preset", "tiny", "--steps", "2", "--eval-windows", "2", "--batch-size", "2"]


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`tlmsearch ARGS` in this process: (exit status, stdout, stderr)."""
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0) if not isinstance(exc.code, str) else 1
    out, err = capsys.readouterr()
    return code, out, err


def ray_started() -> bool:
    ray = sys.modules.get("ray")
    return bool(ray is not None and ray.is_initialized())


@pytest.fixture
def place(tmp_path: Path) -> SimpleNamespace:
    """A runs folder, a plain file where a folder is expected, and bad input files."""
    runs = tmp_path / "runs"
    runs.mkdir()
    afile = tmp_path / "afile"
    afile.write_text("x")
    (tmp_path / "nonutf8.yaml").write_bytes(b"model:\n  arch: \xff\xfe\n")
    (tmp_path / "binary.yaml").write_bytes(b"model:\x00\x01")
    (tmp_path / "bad.yaml").write_text("model: [unclosed\n")
    # nested mappings: the same runaway recursion as nested lists, a twentieth of the parsing time
    (tmp_path / "deep.yaml").write_text("a: " + "{b: " * 5000 + "1" + "}" * 5000 + "\n")
    (tmp_path / "seed.yaml").write_text("seed: 100000000000000000000000\n")
    (tmp_path / "seqlen.yaml").write_text("model:\n  preset: tiny\n  seq_len: 100000000\n")
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "null.yaml").write_text("~\n")
    (tmp_path / "empty_key.yaml").write_text("? \n")
    return SimpleNamespace(tmp=tmp_path, runs=str(runs), runs_path=runs, file=str(afile))


# (case, argv builder, words the error line must contain)
CASES: list[tuple[str, Callable[[SimpleNamespace], list[str]], str]] = [
    ("train --config non-UTF-8", lambda p: ["train", "--config", f"{p.tmp}/nonutf8.yaml", "--runs-dir", p.runs], "not UTF-8"),
    ("train --config binary", lambda p: ["train", "--config", f"{p.tmp}/binary.yaml", "--runs-dir", p.runs], "binary"),
    ("train --config a directory", lambda p: ["train", "--config", str(p.tmp), "--runs-dir", p.runs], "directory"),
    ("train --config bad YAML", lambda p: ["train", "--config", f"{p.tmp}/bad.yaml", "--runs-dir", p.runs], "YAML"),
    ("train --config 5000-deep YAML", lambda p: ["train", "--config", f"{p.tmp}/deep.yaml", "--runs-dir", p.runs], "deep"),
    ("train --model n_layers=abc", lambda p: ["train", "--model", "n_layers=abc", "--runs-dir", p.runs, *SMALL], "n_layers"),
    ("train --name 'x\\n'", lambda p: ["train", "--name", "x\n", "--runs-dir", p.runs, *SMALL], "run name"),
    ("train --cache-dir FILE", lambda p: ["train", "--cache-dir", p.file, "--runs-dir", p.runs, *SMALL], "cache_dir"),
    ("search --cache-dir FILE", lambda p: ["search", "--cache-dir", p.file, "--runs-dir", p.runs, *SMALL], "cache_dir"),
    ("compare --cache-dir FILE", lambda p: ["compare", "--families", "uniform", "--cache-dir", p.file, "--name", "c", "--runs-dir", p.runs, *SMALL], "cache_dir"),
    ("train --runs-dir FILE", lambda p: ["train", "--runs-dir", p.file, *SMALL], "runs_dir"),
    ("train --base-width 1e9", lambda p: ["train", "--base-width", "1000000000", "--runs-dir", p.runs, *SMALL], "memory"),
    ("train --batch-size 1e8", lambda p: ["train", "--batch-size", "100000000", "--runs-dir", p.runs, "--preset", "tiny"], "batch_size"),
    ("train --model seq_len=1e8", lambda p: ["train", "--model", "seq_len=100000000", "--runs-dir", p.runs, *SMALL], "seq_len"),
    ("train --model seq_len=1e6", lambda p: ["train", "--model", "seq_len=1000000", "--runs-dir", p.runs, *SMALL], "memory"),
    ("train --config seq_len: 1e8", lambda p: ["train", "--config", f"{p.tmp}/seqlen.yaml", "--runs-dir", p.runs], "seq_len"),
    ("train --model d_model=1e12", lambda p: ["train", "--model", "d_model=1000000000000", "--runs-dir", p.runs, *SMALL], "d_model"),
    ("search --model seq_len=1e6", lambda p: ["search", "--model", "seq_len=1000000", "--runs-dir", p.runs, *SMALL], "memory"),
    ("train 1e5 layers", lambda p: ["train", "--model", "n_layers=100000", "--runs-dir", p.runs, *SMALL], "n_layers"),
    ("search --config seed: 1e23", lambda p: ["search", "--config", f"{p.tmp}/seed.yaml", "--dry-run"], "seed"),
    ("search --config non-UTF-8", lambda p: ["search", "--config", f"{p.tmp}/nonutf8.yaml", "--dry-run"], "UTF-8"),
    ("search --name 'x\\n'", lambda p: ["search", "--name", "x\n", "--dry-run"], "run name"),
    ("search --space calling sys.exit(0)", lambda p: ["search", "--space", f"{p.tmp}/exits.py", "--dry-run"], "sys.exit"),
    ("search --runs-dir FILE", lambda p: ["search", "--runs-dir", p.file, "--trials", "1", *SMALL], "runs_dir"),
    ("search --base-width 1e9", lambda p: ["search", "--base-width", "1000000000", "--runs-dir", p.runs, *SMALL], "memory"),
    ("search 1e5 layers", lambda p: ["search", "--model", "n_layers=100000", "--runs-dir", p.runs, *SMALL], "n_layers"),
    ("compare --cpus-per-trial nan", lambda p: ["compare", "--families", "uniform", "--cpus-per-trial", "nan", "--name", "c", "--runs-dir", p.runs, *SMALL], "cpus_per_trial"),
    ("compare --model n_layers=abc", lambda p: ["compare", "--families", "uniform", "--model", "n_layers=abc", "--name", "c", "--runs-dir", p.runs, *SMALL], "n_layers"),
    ("compare --name 'x\\n'", lambda p: ["compare", "--families", "uniform", "--name", "x\n", "--runs-dir", p.runs, *SMALL], "run name"),
    ("compare --runs-dir FILE", lambda p: ["compare", "--families", "uniform", "--runs-dir", p.file, *SMALL], "runs_dir"),
    ("compare --base-width 1e9", lambda p: ["compare", "--families", "uniform", "--base-width", "1000000000", "--name", "c", "--runs-dir", p.runs, *SMALL], "memory"),
    ("compare --seed 1e23", lambda p: ["compare", "--families", "uniform", "--train", "seed=100000000000000000000000", "--name", "c", "--runs-dir", p.runs, *SMALL], "seed"),
    # found by bench/bench_hostile.py
    ("train --name of 300 characters", lambda p: ["train", "--name", "x" * 300, "--runs-dir", p.runs, *SMALL], "at most 100 characters"),
    ("search --name of 300 characters", lambda p: ["search", "--name", "x" * 300, "--runs-dir", p.runs, *SMALL], "at most 100 characters"),
    ("compare --name of 300 characters", lambda p: ["compare", "--families", "uniform", "--name", "x" * 300, "--runs-dir", p.runs, *SMALL], "at most 100 characters"),
    ("train --config null YAML", lambda p: ["train", "--config", f"{p.tmp}/null.yaml", "--runs-dir", p.runs], "holds no settings"),
    ("search --config null YAML", lambda p: ["search", "--config", f"{p.tmp}/null.yaml", "--runs-dir", p.runs], "holds no settings"),
    ("study --config null YAML", lambda p: ["study", "--config", f"{p.tmp}/null.yaml", "--runs-dir", p.runs], "holds no settings"),
    ("study --archs '' (not the default four)", lambda p: ["study", "--archs", "", "--runs-dir", p.runs], "archs must name at least one of"),
    ("study --archs ' , '", lambda p: ["study", "--archs", " , ", "--runs-dir", p.runs], "archs must name at least one of"),
    ("search --objectives ''", lambda p: ["search", "--objectives", "", "--runs-dir", p.runs, *SMALL], "objectives=[] must name one or two of"),
    ("train --config with a null key", lambda p: ["train", "--config", f"{p.tmp}/empty_key.yaml", "--runs-dir", p.runs], "unknown section(s) None"),
]  # fmt: skip


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_bad_command_input_is_one_line(case: str, place: SimpleNamespace, capsys: pytest.CaptureFixture[str]) -> None:
    _, build, words = next(c for c in CASES if c[0] == case)
    ray_before = ray_started()  # an earlier test in this process may have left Ray running
    code, _, err = run_cli(capsys, *build(place))
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert words in lines[0], lines[0]
    assert list(place.runs_path.iterdir()) == [], "a refused command left a run directory behind"
    assert ray_before or not ray_started(), "Ray was started for input that was refused"


def test_refused_compare_can_be_retried_with_the_same_name(
    place: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", "--families", "uniform", "--name", "again", "--runs-dir", place.runs, *SMALL]
    for _ in range(2):  # the second refusal is the same one, not "already exists"
        code, _, err = run_cli(capsys, *argv, "--cpus-per-trial", "nan")
        assert code == 2 and "cpus_per_trial" in err and "already exists" not in err, err


# ----------------------------------------------------------------------------- export


def _crafted_run(tmp_path: Path, trial_id: str) -> Path:
    """A run whose best trial's id is crafted (a damaged or hostile trials.jsonl)."""
    run = tmp_path / "runs" / "crafted"
    records = [record("t_ok", "uniform", 2.0), record(trial_id, "cosine:start=1.5,end=0.5", 1.0)]
    return write_run(run, records)


@pytest.mark.parametrize("trial_id", ["../../../escaped", "../../..", "/tmp/abs-escaped", "a/../../../../b"])
def test_export_of_a_crafted_trial_id_writes_nothing_outside(
    trial_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _crafted_run(tmp_path, trial_id)
    before = {p for p in tmp_path.rglob("*")}
    code, _, err = run_cli(capsys, "export", str(run))  # the crafted trial is the best
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "outside" in err or "not a relative path" in err, err
    assert {p for p in tmp_path.rglob("*")} == before
    assert not Path("/tmp/abs-escaped-native").exists()


def test_export_of_a_plain_trial_id_still_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _crafted_run(tmp_path, "t_best")
    code, out, err = run_cli(capsys, "export", str(run))
    assert code == 0, err
    assert (run / "export" / "t_best-native" / "config.yaml").is_file(), out


def test_export_out_onto_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _crafted_run(tmp_path, "t_best")
    target = tmp_path / "afile"
    target.write_text("keep")
    code, _, err = run_cli(capsys, "export", str(run), "--out", str(target))
    assert code == 2 and "is a file" in err and len(err.strip().splitlines()) == 1, err
    assert target.read_text() == "keep"


@pytest.mark.parametrize("out", ["afile", "/proc/no-such-out"])
def test_report_out_onto_a_file_or_unwritable_is_one_line(
    out: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _crafted_run(tmp_path, "t_best")
    target = tmp_path / out if out == "afile" else Path(out)
    if out == "afile":
        target.write_text("keep")
    code, _, err = run_cli(capsys, "report", str(run), "--out", str(target))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err and "--out" in err, err
    assert out != "afile" or target.read_text() == "keep"


def test_damaged_records_are_named_by_status_and_in_the_one_line_of_a_refused_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _crafted_run(tmp_path, "t_best")
    (run / "trials.jsonl").unlink()
    (run / "trials.jsonl").mkdir()
    code, _, err = run_cli(capsys, "status", str(run))
    assert code == 0 and err.strip().splitlines() == [
        f"warning: {run / 'trials.jsonl'} is not a file; no trial is counted here"
    ]
    (run / "trials.jsonl").rmdir()
    (run / "trials.jsonl").write_text("{garbled\n[1]\n")
    for command in ("report", "export"):
        code, _, err = run_cli(capsys, command, str(run))
        lines = err.strip().splitlines()
        assert (
            code == 2
            and len(lines) == 1
            and "no finished trials" in lines[0]
            and "skipped 2 damaged line(s)" in lines[0]
        ), err


def test_report_of_a_damaged_config_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _crafted_run(tmp_path, "t_best")
    (run / "search.yaml").write_bytes(b"arch: \xff\n")
    code, _, err = run_cli(capsys, "report", str(run))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "search.yaml" in err, err


# ----------------------------------------------------------------------------- data and checkpoints


@pytest.mark.parametrize(
    "meta",
    [[1, 2], {"vocab_size": "abc"}, {"vocab_size": True}, {"token_bytes": "abc"}, {"token_bytes": [1, "x"]}],
)
def test_token_metadata_of_the_wrong_type_names_the_file(
    meta: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tlmsearch.data.stream import load_token_files
    from tlmsearch.errors import DataError

    folder = tmp_path / "tok"
    folder.mkdir()
    for name in ("train.bin", "val.bin"):
        np.arange(200, dtype=np.uint16).tofile(folder / name)
    (folder / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DataError, match="meta.json") as info:
        load_token_files(folder, 0.1)
    assert "\n" not in str(info.value)


@pytest.mark.slow  # trains one tiny model first (~15 s on a loaded machine)
def test_a_checkpoint_that_is_a_list_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    runs = str(tmp_path / "runs")
    args = ["--preset", "tiny", "--steps", "1", "--eval-windows", "2", "--batch-size", "2", "--threads", "1"]
    code, _, err = run_cli(capsys, "train", "--name", "r", "--runs-dir", runs, *args, "--keep-checkpoint")
    assert code == 0, err
    ckpt = tmp_path / "runs" / "r" / "checkpoint" / "checkpoint.pt"
    torch.save([1, 2, 3], ckpt)
    code, _, err = run_cli(capsys, "train", "--name", "r", "--runs-dir", runs, "--resume")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "checkpoint" in err and "list" in err, err


# ----------------------------------------------------------------------------- exit status


def test_a_search_where_every_trial_failed_exits_with_the_documented_code(capsys: pytest.CaptureFixture[str]) -> None:
    def study(**counts: int) -> SimpleNamespace:
        full = {"complete": 0, "stopped": 0, "failed": 0, **counts}
        return SimpleNamespace(counts=lambda: full, run_dir="runs/x")

    assert exit_status(study(failed=4)) == EXIT_ALL_FAILED == 3
    assert "all 4 trials failed" in capsys.readouterr().err
    assert exit_status(study(failed=3, complete=1)) == 0
    assert exit_status(study(failed=3, stopped=1)) == 0
    assert exit_status(study()) == 0  # nothing ran (e.g. a time budget of 0): not a failure of trials


# ----------------------------------------------------------------------------- damaged records (bench_hostile)


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ("directory", "is not a file"),
        ("binary", "damaged line(s) (line 1)"),
        ("garbage lines", "3 damaged line(s) (line 1, 2, 3)"),
        ("a record among garbage", "damaged line(s) (line 2)"),
    ],
)
def test_resume_of_damaged_records_is_one_line_before_ray(
    damage: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from record_fakes import build_record

    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.tuning import SearchConfig, runner

    def no_ray(*args: object, **kwargs: object) -> None:
        raise AssertionError("Ray started for a damaged trials.jsonl")

    monkeypatch.setattr(runner, "start_ray", no_ray)
    cfg = SearchConfig(name="r", preset="tiny", trials=4, train=TrainConfig(steps=30), data=DataConfig(corpus="pydoc"))
    cfg.save(tmp_path / "search.yaml")
    trials = tmp_path / "trials.jsonl"
    if damage == "directory":
        trials.mkdir()
    elif damage == "binary":
        trials.write_bytes(b"\x00\xff\xfe" * 50 + b"\n")
    elif damage == "garbage lines":
        trials.write_text('{not json}\n[1, 2]\n"x"\n')
    else:
        good = json.dumps(build_record(cfg, "t0", {"profile": "uniform", "number": 0}, {"step": 30}).to_dict())
        trials.write_text(f"{good}\n{{garbled\n{good.replace('t0', 't1')}\n")
    code, _, err = run_cli(capsys, "resume", str(tmp_path), "--quiet")
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "trials.jsonl" in lines[0] and words in lines[0], err
