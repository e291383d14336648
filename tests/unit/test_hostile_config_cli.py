"""Hostile model flags and refused runs of `tlmsearch train` / `search`, in process: exit status
2, one line without a traceback, and no run directory left behind by a refused run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tlmsearch.cli import main

QUICK = ["--preset", "tiny", "--corpus", "pydoc", "--steps", "2", "--eval-interval", "2", "--threads", "1"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")  # pydoc is prepared once for the module


@pytest.fixture(autouse=True)
def _env(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(cache))
    monkeypatch.setattr("tlmsearch.training.trainer.matmul_peak", lambda device, dtype, cache_dir=None: 1e11)


def _train(tmp_path: Path, *extra: str, name: str = "r") -> int:
    return main(["train", *QUICK, "--runs-dir", str(tmp_path / "runs"), "--name", name, *extra])


def _refused(capsys: pytest.CaptureFixture[str], rc: int, *parts: str) -> str:
    out, err = capsys.readouterr()
    assert rc == 2, out + err
    assert "Traceback" not in out + err
    line = err.strip()
    assert len(line.splitlines()) == 1, line
    for part in parts:
        assert part in line, line
    return line


# ----------------------------------------------------------------------------- finding 1


@pytest.mark.parametrize(
    ("arch", "value", "message"),
    [
        ("transformer", "5", "model.options: expected a mapping"),
        ("gated_attention", "{gate: x}", "options.gate='x' is not allowed"),
        ("gated_attention", "{nosuch: 1}", "model.options: nosuch is not an option of arch='gated_attention'"),
        ("titans", "{mem_chunk: abc}", "model.options.mem_chunk: expected an integer"),
        (
            "transformer",
            "{mem_chunk: 8}",
            "model.options: mem_chunk (an option of titans) is not an option of arch='transformer'; its options: none",
        ),
    ],
)
def test_train_model_options_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arch: str, value: str, message: str
) -> None:
    _refused(capsys, _train(tmp_path, "--arch", arch, "--model", f"options={value}"), message)
    assert not (tmp_path / "runs" / "r").exists()


def test_search_config_model_options_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "o.yaml"
    path.write_text("trials: 2\npreset: tiny\nmodel: {options: 5}\n")
    _refused(capsys, main(["search", "--config", str(path), "--dry-run"]), "model.options: expected a mapping")
    path.write_text("trials: 2\npreset: tiny\narch: hope_attention\nmodel: {options: {gate: headwise}}\n")
    _refused(
        capsys,
        main(["search", "--config", str(path), "--dry-run"]),
        "model.options: gate (an option of gated_attention) is not an option of arch='hope_attention'; "
        "its options: cms_levels, cms_periods",
    )


# ----------------------------------------------------------------------------- finding 2


@pytest.mark.parametrize(
    ("pair", "flag"),
    [
        ("family=cosine", "--family"),
        ("preset=tiny", "--preset"),
        ("arch=transformer", "--arch"),
        ("base_width=64", "--base-width"),
    ],
)
def test_train_model_spec_keys_mean_their_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, pair: str, flag: str
) -> None:
    from tlmsearch.cli.train import resolve_run_config

    seen: list[Any] = []
    parser_args = ["train", *QUICK, "--model", pair]

    def capture(args: Any) -> int:
        seen.append(resolve_run_config(args))
        return 0

    monkeypatch.setattr("tlmsearch.cli.train.run", capture)
    assert main(parser_args) == 0
    key, value = pair.split("=")
    assert str(getattr(seen[0].model, key)) == value
    assert key not in seen[0].model.overrides


def test_train_model_family_trains(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _train(tmp_path, "--model", "family=cosine:start=1.5,end=0.5") == 0
    config = yaml.safe_load((tmp_path / "runs" / "r" / "config.yaml").read_text())
    assert config["meta"]["family"].startswith("cosine")
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--family", "uniform", "--model", "family=cosine"], "--model family=cosine conflicts with --family uniform"),
        (["--model", "preset=cpu-s"], "--model preset=cpu-s conflicts with --preset tiny"),
        (["--model", "base_width=abc"], "model.base_width: expected an integer"),
        (["--model", "family=nosuch"], "nosuch"),
    ],
)
def test_train_model_spec_keys_conflicts_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    _refused(capsys, _train(tmp_path, *flags), message)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


# ----------------------------------------------------------------------------- finding 3


def test_search_model_widths_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mw.yaml"
    path.write_text("trials: 2\npreset: tiny\nmodel: {mlp_widths: [64, 64]}\n")
    rc = main(["search", "--config", str(path), "--dry-run"])
    _refused(capsys, rc, "model.mlp_widths", "the search chooses the widths", "tlmsearch train --family")


# ----------------------------------------------------------------------------- finding 5


def test_train_bool_override_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _refused(
        capsys, _train(tmp_path, "--model", "tie_embeddings=maybe"), "model.tie_embeddings: expected true or false"
    )
    assert not (tmp_path / "runs" / "r").exists()
    _refused(capsys, _train(tmp_path, "--train", "compile=maybe"), "compile: expected true or false")


def test_search_bool_override_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "b.yaml"
    path.write_text("trials: 2\npreset: tiny\nmodel: {tie_embeddings: maybe}\n")
    _refused(capsys, main(["search", "--config", str(path), "--dry-run"]), "model.tie_embeddings")


def test_train_bool_override_false_spelling_is_kept(tmp_path: Path) -> None:
    assert _train(tmp_path, "--model", "tie_embeddings=false") == 0
    config = yaml.safe_load((tmp_path / "runs" / "r" / "config.yaml").read_text())
    assert config["model"]["tie_embeddings"] is False
    assert _train(tmp_path, "--config", str(tmp_path / "runs" / "r" / "config.yaml"), name="again") == 0


def test_train_vocab_size_not_the_tokenizers_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _refused(capsys, _train(tmp_path, "--model", "vocab_size=10"), "vocab_size=10", "tokenizer", "256")
    assert not (tmp_path / "runs" / "r").exists()
    spec = tmp_path / "spec.yaml"
    spec.write_text("model: {preset: tiny, vocab_size: 10}\n")
    _refused(capsys, _train(tmp_path, "--config", str(spec)), "vocab_size=10")
    assert _train(tmp_path, "--model", "vocab_size=256") == 0  # the tokenizer's own: allowed


# ----------------------------------------------------------------------------- finding 6


def test_refused_device_leaves_no_run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    _refused(capsys, _train(tmp_path, "--device", "cuda", name="bad2"), "no CUDA device")
    assert not (tmp_path / "runs" / "bad2").exists()
    assert _train(tmp_path, name="bad2") == 0  # the name is still free


def test_too_small_corpus_leaves_no_run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "small.txt"
    text.write_text("a" * 1000 + "\n")
    runs = str(tmp_path / "runs")
    rc = main(
        [
            "train",
            "--preset",
            "cpu-xs",
            "--corpus",
            f"text:{text}",
            "--steps",
            "2",
            "--runs-dir",
            runs,
            "--name",
            "bad3",
        ]
    )
    _refused(capsys, rc, "too small for seq_len=128")
    assert not (tmp_path / "runs" / "bad3").exists()


def test_failure_after_the_dir_exists_removes_only_an_untrained_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tlmsearch.errors import DataError

    def fails_before_training(*args: Any, **kwargs: Any) -> Any:
        raise DataError("corpus vanished")

    monkeypatch.setattr("tlmsearch.training.trainer.train", fails_before_training)
    _refused(capsys, _train(tmp_path, name="gone"), "corpus vanished")
    assert not (tmp_path / "runs" / "gone").exists()

    def fails_after_a_checkpoint(*args: Any, checkpoint_dir: Path, **kwargs: Any) -> Any:
        Path(checkpoint_dir).mkdir()
        (Path(checkpoint_dir) / "checkpoint.pt").write_bytes(b"x")
        raise DataError("corpus vanished")

    monkeypatch.setattr("tlmsearch.training.trainer.train", fails_after_a_checkpoint)
    _refused(capsys, _train(tmp_path, name="kept"), "corpus vanished")
    assert (tmp_path / "runs" / "kept" / "checkpoint" / "checkpoint.pt").is_file()  # a result: kept


def test_existing_name_refused_and_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "runs" / "old"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("model: {preset: tiny}\n")
    _refused(capsys, _train(tmp_path, name="old"), "already exists")
    assert (run / "config.yaml").is_file()
