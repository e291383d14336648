"""Damaged caches and hostile data inputs: the step-rate cache, prepared corpora, cache folders
that are files or unwritable, and corpora too small for the sequence length."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from tlmsearch.cli import main
from tlmsearch.configs.presets import preset
from tlmsearch.core.base import DataConfig
from tlmsearch.costs.rates import rate_for, rate_shape, rates_file, record_rate
from tlmsearch.data import TokenData, check_windows, prepare
from tlmsearch.errors import DataError

QUICK = ["--preset", "tiny", "--corpus", "pydoc", "--steps", "2", "--eval-interval", "2", "--threads", "1"]
MODEL = preset("tiny").model_config("transformer").to_dict()
TRAIN = {"batch_size": 16, "grad_accum": 1, "eval_interval": 50, "eval_windows": 32, "dtype": "float32",
         "compile": False, "threads": 1}  # fmt: skip


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("TLMSEARCH_CACHE", str(cache))
    monkeypatch.setattr("tlmsearch.training.trainer.matmul_peak", lambda device, dtype, cache_dir=None: 1e11)
    return cache


def _random_bytes(n: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(n)


def _folder(cache: Path) -> Path:
    (folder,) = (cache / "corpora" / "pydoc").glob("byte-*")
    return folder


# ----------------------------------------------------------------------------- 1. step-rates.jsonl


def test_a_rate_file_of_random_bytes_is_skipped_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shape = rate_shape(MODEL, TRAIN, "cpu")
    path = rates_file(tmp_path)
    path.write_bytes(_random_bytes(2000))
    assert rate_for(tmp_path, shape) is None  # no UnicodeDecodeError
    assert rate_for(tmp_path, shape) is None
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and "damaged line" in err and "\n" == err[-1] and err.count("\n") == 1
    # a new measurement lands on a line of its own, after the damage, which stays in place
    assert record_rate(tmp_path, shape, 0.25, 1.0, "test")
    assert path.read_bytes().startswith(_random_bytes(2000))
    rate = rate_for(tmp_path, shape)
    assert rate is not None and rate.s_per_step_low == 0.25


def test_damaged_figures_in_a_rate_line_are_skipped(tmp_path: Path) -> None:
    shape = rate_shape(MODEL, TRAIN, "cpu")
    record_rate(tmp_path, shape, 0.5, 2.0, "test")
    key = json.loads(rates_file(tmp_path).read_text())["key"]
    bad = [{"key": key, "s_per_step": v} for v in (True, "fast", float("inf"), -1.0, None, [1])]
    bad.append({"key": key, "s_per_step": 0.4, "overhead_s": "x"})  # the figure stays, the overhead is 0
    with rates_file(tmp_path).open("a") as f:
        f.write("".join(json.dumps(line) + "\n" for line in bad) + "[" * 100_000 + "\n")
    rate = rate_for(tmp_path, shape)
    assert rate is not None and (rate.s_per_step_low, rate.s_per_step_high) == (0.4, 0.5)


def test_train_survives_a_damaged_rate_file(_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _cache.mkdir(parents=True)
    rates_file(_cache).write_bytes(_random_bytes(2000))
    for name in ("a", "b"):  # and every later run too
        assert main(["train", *QUICK, "--runs-dir", str(tmp_path / "runs"), "--name", name]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert rates_file(_cache).read_bytes().startswith(_random_bytes(2000))  # not deleted


# ----------------------------------------------------------------------------- 2. prepared corpora


@pytest.mark.parametrize(
    "damage",
    ["bad-meta", "meta-list", "meta-binary", "odd-train", "short-val", "no-train", "wrong-count", "big-token"],
)
def test_a_damaged_prepared_corpus_is_prepared_again(
    _cache: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = DataConfig(corpus="pydoc")
    good = prepare(cfg)
    train, val = np.array(good.train), np.array(good.val)
    folder = _folder(_cache)
    meta = json.loads((folder / "meta.json").read_text())
    if damage == "bad-meta":
        (folder / "meta.json").write_text("{bad")
    elif damage == "meta-list":
        (folder / "meta.json").write_text("[1, 2]")
    elif damage == "meta-binary":
        (folder / "meta.json").write_bytes(_random_bytes(300))
    elif damage == "odd-train":
        (folder / "train.bin").write_bytes((folder / "train.bin").read_bytes()[:1001])
    elif damage == "short-val":
        (folder / "val.bin").write_bytes((folder / "val.bin").read_bytes()[:1000])
    elif damage == "no-train":
        (folder / "train.bin").unlink()
    elif damage == "wrong-count":
        (folder / "meta.json").write_text(json.dumps({**meta, "train_tokens": "many"}))
    else:
        np.full(train.shape, 60000, dtype=np.uint16).tofile(folder / "train.bin")
    capsys.readouterr()
    again = prepare(cfg)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "damaged" in err and "preparing it again" in err and str(folder) in err
    assert np.array_equal(again.train, train) and np.array_equal(again.val, val)
    prepare(cfg)
    assert capsys.readouterr().err == ""  # mended: the next use is silent


def test_a_half_prepared_folder_is_never_used(_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A preparation killed before meta.json: what it left is prepared again, the tmp files removed."""
    cfg = DataConfig(corpus="pydoc")
    train = np.array(prepare(cfg).train)
    folder = _folder(_cache)
    (folder / "meta.json").unlink()
    (folder / "train.bin").write_bytes(b"\x01\x00" * 10)
    (folder / "val.bin.123.tmp").write_bytes(b"\x00" * 7)
    again = prepare(cfg)
    assert np.array_equal(again.train, train) and not list(folder.glob("*.tmp"))


def test_cli_mends_a_corrupt_prepared_corpus(_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "prepare", "pydoc"]) == 0
    (_folder(_cache) / "meta.json").write_text("{bad")
    assert main(["data", "prepare", "pydoc"]) == 0
    (_folder(_cache) / "train.bin").write_bytes((_folder(_cache) / "train.bin").read_bytes()[:1001])
    assert main(["train", *QUICK, "--runs-dir", str(tmp_path / "runs"), "--name", "t"]) == 0
    err = capsys.readouterr().err
    assert err.count("preparing it again") == 2 and "Traceback" not in err


def test_a_damaged_corpus_in_an_unwritable_cache_names_the_folder_to_delete(
    _cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = DataConfig(corpus="pydoc")
    prepare(cfg)
    folder = _folder(_cache)
    (folder / "meta.json").write_text("{bad")

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("tlmsearch.data.stream._build", refuse)
    with pytest.raises(DataError, match=f"delete {folder}") as info:
        prepare(cfg)
    assert "\n" not in str(info.value) and "Permission denied" in str(info.value)


def test_a_damaged_checksum_note_is_rewritten(_cache: Path) -> None:
    cfg = DataConfig(corpus="pydoc")
    prepare(cfg)
    note = _cache / "corpora" / "pydoc" / "checksum.json"
    note.write_text('["not", "a", "dict"]')
    prepare(cfg)
    assert isinstance(json.loads(note.read_text()), dict)


# ----------------------------------------------------------------------------- 3. cache folders


@pytest.mark.parametrize("where", ["flag-file", "env-file", "flag-proc", "env-below-file"])
def test_data_prepare_refuses_a_cache_dir_that_is_no_folder(
    tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    target = {"flag-file": afile, "env-file": afile, "flag-proc": Path("/proc/nope"), "env-below-file": afile / "sub"}
    args = ["data", "prepare", "pydoc"]
    if where.startswith("flag"):
        args += ["--cache-dir", str(target[where])]
    else:
        monkeypatch.setenv("TLMSEARCH_CACHE", str(target[where]))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and "cache_dir" in err
    assert ("is a file" in err) if where != "flag-proc" else ("cannot write" in err)


def test_prepare_in_a_cache_below_a_file_is_a_data_error(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(DataError, match="choose a writable cache folder"):
        prepare(DataConfig(corpus="pydoc", cache_dir=str(afile / "sub")))


# ----------------------------------------------------------------------------- 4. corpus too small


def _small_corpus(tmp_path: Path, n: int = 1001) -> Path:
    rng = random.Random(0)
    path = tmp_path / "k1.txt"
    path.write_text("".join(rng.choice("abcdefgh \n") for _ in range(n)))
    return path


def test_check_windows_names_the_sizes_and_the_minimum(tmp_path: Path) -> None:
    data = prepare(DataConfig(corpus=f"text:{_small_corpus(tmp_path)}"))
    n_train, n_val = data.train.shape[0], data.val.shape[0]
    with pytest.raises(DataError) as info:
        check_windows(data, 128)
    text = str(info.value)
    assert f"{n_train + n_val:,} tokens" in text and f"{n_train:,} training and {n_val:,} validation" in text
    assert "seq_len + 1 = 129" in text and "the validation part falls short" in text and "\n" not in text
    check_windows(data, min(n_train, n_val) - 1)  # just long enough: no error
    empty = TokenData("x", "byte", 256, np.zeros(0, np.uint16), np.zeros(0, np.uint16), None, "", None)
    with pytest.raises(DataError, match="training and validation parts fall short"):
        check_windows(empty, 8)


def test_search_refuses_a_corpus_too_small_for_seq_len_before_ray(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_ray(*args: object, **kwargs: object) -> None:
        raise AssertionError("Ray was started for a corpus too small for seq_len")

    monkeypatch.setattr("tlmsearch.tuning.runner.ensure_ray", no_ray)
    monkeypatch.setattr("tlmsearch.training.hardware.matmul_peak", lambda *a, **k: 1e11)
    runs = tmp_path / "sruns"
    args = ["search", "--preset", "cpu-xs", "--runs-dir", str(runs), "--steps", "2", "--trials", "2"]
    args += ["--noise-seeds", "0", "--quiet", "--name", "small", "--corpus", f"text:{_small_corpus(tmp_path)}"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "seq_len + 1" in err and "Traceback" not in err
    assert not (runs / "small").exists()
