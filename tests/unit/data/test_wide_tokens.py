"""Bring your own tokenizer: a local Hugging Face tokenizer folder (tokenizer.json, built here with
the `tokenizers` library, no hub) of 128,256 tokens, Llama 3's size, prepares a small corpus into
uint32 token files (ids above 65,535 do not fit 16 bits) that `tokens:PATH` reads back id for id,
and the ids decode to the corpus's training documents."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tlmsearch.data.shards import PrepareConfig, held_out, prepare_tokens
from tlmsearch.data.stream import gather, load_token_files
from tlmsearch.data.tokenizer import BPETokenizer, token_dtype
from tlmsearch.errors import DataError

tokenizers = pytest.importorskip("tokenizers")
VOCAB = 128_256
WORDS = ["to", "be", "or", "not", "that", "is", "the", "question", "whether", "tis", "nobler", "in", "mind"]


def _tokenizer_folder(folder: Path) -> Path:
    """A word-level tokenizer.json whose corpus words have ids above 65,535 (others fill the vocab)."""
    vocab = {f"<t{i}>": i for i in range(VOCAB)}
    for j, word in enumerate(WORDS):  # replace high entries by the words
        del vocab[f"<t{70_000 + 997 * j}>"]
        vocab[word] = 70_000 + 997 * j
    del vocab["<t0>"]
    vocab["[UNK]"] = 0
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    folder.mkdir(parents=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder


def test_token_dtype_widens_past_sixteen_bits() -> None:
    assert token_dtype(256) is np.uint16 and token_dtype(65_536) is np.uint16
    assert token_dtype(65_537) is np.uint32 and token_dtype(VOCAB) is np.uint32


def test_a_128k_tokenizer_round_trips_a_corpus_through_uint32_token_files(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    docs = [" ".join(rng.choice(WORDS, size=40)) for _ in range(30)]
    source = tmp_path / "corpus.jsonl"
    source.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    folder = _tokenizer_folder(tmp_path / "llama-sized")
    out = tmp_path / "tokens"
    meta = prepare_tokens(PrepareConfig(source=str(source), out=str(out), tokenizer=str(folder), val_fraction=0.1))
    assert meta["vocab_size"] == VOCAB and meta["dtype"] == "uint32"
    data = load_token_files(out, 0.1)
    assert data.vocab_size == VOCAB and data.train.dtype == np.uint32
    tok = BPETokenizer(folder / "tokenizer.json")
    train_docs = [d for i, d in enumerate(docs) if not held_out(i, 100_000)]
    val_docs = [d for i, d in enumerate(docs) if held_out(i, 100_000)]
    expected = np.concatenate([tok.encode(d) for d in train_docs])
    assert int(expected.max()) > 65_535 and np.array_equal(np.asarray(data.train), expected)
    assert tok.decode(np.asarray(data.train)).split() == " ".join(train_docs).split()  # the text back
    assert tok.decode(np.asarray(data.val)).split() == " ".join(val_docs).split()
    window = gather(data.train, np.array([0]), 8)  # what training reads: ids intact past 16 bits
    assert window.dtype == np.int64 and np.array_equal(window[0], expected[:9].astype(np.int64))


def test_meta_says_uint32_or_the_files_are_uint16(tmp_path: Path) -> None:
    ids = np.array([1, 70_000, 128_000, 5] * 8, dtype=np.uint32)
    ids.tofile(tmp_path / "train.bin")
    ids.tofile(tmp_path / "val.bin")
    (tmp_path / "meta.json").write_text(json.dumps({"vocab_size": VOCAB}))  # dtype from the vocabulary
    assert int(load_token_files(tmp_path, 0.1).train.max()) == 128_000
    (tmp_path / "meta.json").write_text(json.dumps({"vocab_size": VOCAB, "dtype": "uint8"}))
    with pytest.raises(DataError, match="dtype='uint8'.*allowed: uint16, uint32"):
        load_token_files(tmp_path, 0.1)
    (tmp_path / "meta.json").write_text(json.dumps({"vocab_size": VOCAB, "dtype": "uint16"}))
    with pytest.raises(DataError, match=r"vocab_size=128256 must be an integer in \[1, 65536\]"):
        load_token_files(tmp_path, 0.1)
