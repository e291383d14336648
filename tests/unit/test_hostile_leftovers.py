"""A refusal leaves no run directory behind (issue 31): a command refused after it made its run
directory (an unreadable corpus found when the data is prepared, an unreachable cluster) removes
it again, and a directory that a refused or killed command left holding nothing recorded never
blocks the corrected command with "already exists". Nothing here trains or starts Ray."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from tlmsearch.cli import main
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.layout import create_run_dir, discard_unstarted, unstarted

SMALL = ["--preset", "tiny", "--steps", "2", "--eval-windows", "2", "--batch-size", "2"]


def refused(capsys: pytest.CaptureFixture[str], argv: list[str], *words: str) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize("corpus", ["text:{tmp}/nowhere", "text:{tmp}/empty"])
def test_compare_with_a_bad_corpus_leaves_no_run_directory_and_can_be_retried(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], corpus: str
) -> None:
    (tmp_path / "empty").mkdir()
    runs = tmp_path / "runs"
    argv = ["compare", "--families", "uniform", "--seeds", "2", "--runs-dir", str(runs), "--name", "c", "--quiet"]
    argv += ["--corpus", corpus.format(tmp=tmp_path), *SMALL]
    first = refused(capsys, argv)
    assert not (runs / "c").exists(), "the refused compare left its run directory behind"
    again = refused(capsys, argv)  # the same refusal, not "already exists"
    assert again == first and "already exists" not in again


def test_train_with_a_bad_corpus_leaves_no_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    refused(capsys, ["train", "--corpus", f"text:{tmp_path}/nowhere", "--runs-dir", str(runs), "--name", "t", *SMALL])
    assert not (runs / "t").exists()


def test_study_with_an_unreachable_address_is_refused_before_its_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    argv = ["study", "--archs", "transformer", "--trials", "2", "--runs-dir", str(runs), "--name", "s", "--quiet"]
    four = ["--model", "n_layers=4"]  # tiny's 2 layers make cosine and linear one model: refused for that first
    refused(capsys, [*argv, "--address", "127.0.0.1:1", *SMALL, *four], "127.0.0.1:1")
    assert not (runs / "s").exists(), "the refused study left its directory behind"


# ----------------------------------------------------------------------------- the mechanism


def test_a_half_made_run_directory_is_reused_by_the_next_command(tmp_path: Path) -> None:
    half = tmp_path / "c"
    half.mkdir()
    for name in ("search.yaml", "compare.json", "environment.json", "locations.json", ".lock"):
        (half / name).write_text("{}\n")
    (half / "fixed").mkdir()  # an empty folder records nothing either
    assert unstarted(half)
    assert create_run_dir(tmp_path, "c") == half
    assert list(half.iterdir()) == []  # emptied for the new run


@pytest.mark.parametrize("recorded", ["trials.jsonl", "metrics.jsonl", "optuna.log", "tune/experiment_state.json"])
def test_a_run_directory_that_recorded_anything_still_blocks_its_name(tmp_path: Path, recorded: str) -> None:
    run = tmp_path / "r"
    (run / recorded).parent.mkdir(parents=True)
    (run / "search.yaml").write_text("{}\n")
    (run / recorded).write_text("{}\n")
    assert not unstarted(run)
    with pytest.raises(ConfigError, match="already exists"):
        create_run_dir(tmp_path, "r")
    assert (run / recorded).exists()


def test_a_run_directory_whose_lock_is_held_is_never_reused_or_discarded(tmp_path: Path) -> None:
    run = tmp_path / "busy"
    run.mkdir()
    (run / "search.yaml").write_text("{}\n")
    fd = os.open(run / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a search starting in this directory
        with pytest.raises(ConfigError, match="already exists"):
            create_run_dir(tmp_path, "busy")
    finally:
        os.close(fd)
    assert (run / "search.yaml").exists()


def test_discard_removes_only_what_this_process_made_and_left_unrecorded(tmp_path: Path) -> None:
    discard_unstarted()  # forget what earlier tests made
    kept_foreign = tmp_path / "foreign"
    kept_foreign.mkdir()  # not made here: never touched
    made_empty = create_run_dir(tmp_path, "a")
    made_recorded = create_run_dir(tmp_path, "b")
    (made_recorded / "trials.jsonl").write_text("{}\n")
    assert discard_unstarted() == [made_empty]
    assert kept_foreign.exists() and made_recorded.exists() and not made_empty.exists()
