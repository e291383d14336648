"""Real text for short training trials: corpora, tokenizers and cached token streams.

from tlmsearch.data import prepare
data = prepare(DataConfig(corpus="shakespeare"))   # TokenData: memory-mapped train/val
"""

from __future__ import annotations

from tlmsearch.data.corpora import BUILTIN, CorpusText, load_corpus
from tlmsearch.data.stream import (
    TokenData,
    check_windows,
    gather,
    iter_val_batches,
    load_tokenizer,
    prepare,
    tile_windows,
    train_starts,
    val_windows,
)
from tlmsearch.data.tokenizer import BPETokenizer, ByteTokenizer, Tokenizer

__all__ = [
    "BUILTIN",
    "BPETokenizer",
    "ByteTokenizer",
    "CorpusText",
    "TokenData",
    "Tokenizer",
    "check_windows",
    "gather",
    "iter_val_batches",
    "load_corpus",
    "load_tokenizer",
    "prepare",
    "tile_windows",
    "train_starts",
    "val_windows",
]
