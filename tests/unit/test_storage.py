"""`tlmsearch.configs.storage`: the trial storage's text checks and names (pure)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.storage import check_storage, is_uri, join, local_path, normalise, parent, scheme, trial_root
from tlmsearch.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "kind"),
    [("", ""), ("/mnt/nfs/tlm", ""), ("runs/x", ""), ("s3://b/p", "s3"), ("GS://b", "gs"), ("file:///x", "file"),
     ("a/b://c", "")],
)  # fmt: skip
def test_scheme(text: str, kind: str) -> None:
    assert scheme(text) == kind


@pytest.mark.parametrize(
    "text", ["", "/mnt/nfs/tlm", "rel/dir", "s3://bucket/prefix", "s3://bucket?region=eu-west-1", "gs://b/p",
             "file:///abs/path", "hdfs://namenode:8020/tlm", "abfss://container@account/p"],
)  # fmt: skip
def test_accepted(text: str) -> None:
    assert check_storage(text) == text
    assert SearchConfig(storage=text).storage == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ftp://host/dir", "unsupported URI scheme 'ftp'; use a shared filesystem path or a URI with one of: file://"),
        ("mock://x/y", "unsupported URI scheme 'mock'"),
        ("s3://", "names no bucket"),
        ("gs:///prefix", "names no bucket"),
        ("file://relative", "needs an absolute path"),
        ("://x", "is not a path or a URI"),
        ("/tmp/a\nb", "control character"),
    ],
)
def test_refused_in_one_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        SearchConfig(storage=text)
    assert "\n" not in str(info.value) and "storage=" in str(info.value)


def test_normalise_makes_paths_absolute_and_keeps_uris(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert normalise("ckpt") == str(tmp_path / "ckpt")
    assert normalise("~/x") == os.path.expanduser("~/x")
    assert normalise("s3://b/p") == "s3://b/p" and normalise("") == ""


def test_join_parent_and_local_path() -> None:
    assert join("s3://b/p/", "run", "tune") == "s3://b/p/run/tune"
    assert join("s3://b/p?region=x", "run") == "s3://b/p/run?region=x"  # the query stays last
    assert join("/mnt/nfs", "run") == "/mnt/nfs/run" and join("/", "run") == "/run"
    assert parent("s3://b/p/run/tune?region=x") == "s3://b/p/run?region=x"
    assert parent("/mnt/nfs/run/tune") == "/mnt/nfs/run"
    assert trial_root("gs://b/tlm", "big") == "gs://b/tlm/big"
    assert local_path("file:///mnt/x?y=1") == Path("/mnt/x") and local_path("/a") == Path("/a")
    assert local_path("s3://b/p") is None and is_uri("s3://b") and not is_uri("/a")
    with pytest.raises(ValueError):
        trial_root("", "x")


def test_a_study_gives_each_of_its_runs_a_folder_below_its_storage() -> None:
    from tlmsearch.configs.study import StudyConfig

    cfg = StudyConfig.from_flat(dict(name="across", storage="s3://bucket/tlm", gpus_per_trial=0.25))
    search = cfg.search_config("titans")
    assert search.storage == "s3://bucket/tlm/across" and search.gpus_per_trial == 0.25
    assert StudyConfig().search_config("titans").storage == ""
    assert StudyConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="storage='ftp://x': unsupported URI scheme"):
        StudyConfig.from_flat(dict(storage="ftp://x"))


@pytest.mark.parametrize("command", ["compare", "verify", "study"])
def test_every_training_command_refuses_a_bad_storage_in_one_line(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from analysis_fakes import search_records, write_run

    from tlmsearch.cli import main

    common = ["--storage", "ftp://host/dir"]
    argv = {
        "compare": ["compare", "--families", "uniform", "cosine", "--preset", "tiny", "--corpus", "pydoc",
                    "--runs-dir", str(tmp_path), *common],
        "verify": ["verify", str(write_run(tmp_path / "run", search_records())), "--seeds", "2", *common],
        "study": ["study", "--archs", "transformer", "--preset", "tiny", "--runs-dir", str(tmp_path), *common],
    }[command]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "unsupported URI scheme 'ftp'" in err, err
    assert not any(tmp_path.glob("compare-*")) and not any(tmp_path.glob("study-*"))
