"""Tokenizers: raw bytes (vocab 256, the default) and a byte-level BPE trained on the corpus.

Both map text to token arrays (uint16, or uint32 for a vocabulary over 65,536: `token_dtype`)
and know how many UTF-8 bytes each token stands for (`token_bytes`), which turns a loss in nats
per token into bits per byte exactly. `BPETokenizer(path)` also reads any Hugging Face
`tokenizer.json` (a local folder's: `tlmsearch data prepare --tokenizer PATH`).
The BPE is trained with the `tokenizers` library on the training part only and cached as
`tokenizer.json` in a folder keyed by the corpus checksum and vocab size.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol

import numpy as np

LINE_PROBE = ["one two\n", "three four\n", "five\n"]  # lines whose ids, encoded apart, must equal the whole's
BYTE_PIECE = re.compile(r"<0x[0-9A-Fa-f]{2}>")  # SentencePiece's byte fallback: one byte


class Tokenizer(Protocol):
    name: str
    vocab_size: int

    def encode(self, text: str) -> np.ndarray: ...  # (N,) uint16 (uint32 over 65,536 tokens)

    def decode(self, tokens: np.ndarray | list[int]) -> str: ...

    def token_bytes(self) -> np.ndarray: ...  # (vocab_size,) int64: UTF-8 bytes per token


class ByteTokenizer:
    """Each UTF-8 byte is one token."""

    name = "byte"
    vocab_size = 256

    def encode(self, text: str) -> np.ndarray:
        return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.uint16)

    def decode(self, tokens: np.ndarray | list[int]) -> str:
        return bytes(np.asarray(tokens, dtype=np.uint8).tolist()).decode("utf-8", errors="replace")

    def token_bytes(self) -> np.ndarray:
        return np.ones(256, dtype=np.int64)


def token_dtype(vocab_size: int) -> type[np.unsignedinteger[Any]]:
    """The narrowest unsigned integer holding every id of a vocabulary: uint16 up to 65,536
    tokens, uint32 above (Llama 3's 128,256)."""
    return np.uint16 if vocab_size <= 2**16 else np.uint32


class BPETokenizer:
    """A Hugging Face tokenizer.json: tlmsearch's own byte-level BPE (GPT-2 style pre-tokenization,
    no special tokens), or one given (byte-level as GPT-2's and Llama 3's, SentencePiece-style as
    Llama 2's and Gemma's), which encodes text as text: no special tokens added."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer as HFTokenizer

        self._tok = HFTokenizer.from_file(str(path))
        self.vocab_size = int(self._tok.get_vocab_size())
        self.name = f"bpe{self.vocab_size}"
        self.dtype = token_dtype(self.vocab_size)
        self._by_line = self._ids(["".join(LINE_PROBE)]) == self._ids(LINE_PROBE)

    @classmethod
    def train(cls, text: str, vocab_size: int, path: Path) -> BPETokenizer:
        from tokenizers import Tokenizer as HFTokenizer
        from tokenizers import decoders, models, pre_tokenizers, trainers

        tok = HFTokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
            special_tokens=[],
        )
        chunk = 1 << 16
        tok.train_from_iterator((text[i : i + chunk] for i in range(0, len(text), chunk)), trainer=trainer)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tok.save(str(tmp))
        tmp.replace(path)
        return cls(path)

    def _ids(self, pieces: list[str]) -> list[int]:
        """The ids of the pieces encoded one by one, concatenated; no special tokens added (a
        post-processor's <|begin_of_text|> or <s> is a model's convention, not text)."""
        return [i for e in self._tok.encode_batch(pieces, add_special_tokens=False) for i in e.ids]

    def encode(self, text: str) -> np.ndarray:
        # line by line in batches where that gives the ids of the whole text (a byte-level BPE without
        # a prefix space, as tlmsearch's own: one huge string is slow in the Rust pre-tokenizer);
        # whole where each piece would gain a prefix (SentencePiece's leading "▁" on every line)
        pieces = text.splitlines(keepends=True) if self._by_line else [text]
        return np.asarray(self._ids(pieces), dtype=self.dtype)

    def decode(self, tokens: np.ndarray | list[int]) -> str:
        return str(self._tok.decode([int(t) for t in tokens]))

    def token_bytes(self) -> np.ndarray:
        """UTF-8 bytes of text per token: a byte-level piece holds one character per byte; a
        SentencePiece-style piece is text with "▁" for a space, or one byte `<0xNN>`; an added
        (special) token stands for its own text, where the text held it."""
        from tokenizers import decoders

        byte_level = isinstance(self._tok.decoder, decoders.ByteLevel)
        added = {idx: token.content for idx, token in self._tok.get_added_tokens_decoder().items()}
        lengths = np.zeros(self.vocab_size, dtype=np.int64)
        for piece, idx in self._tok.get_vocab(with_added_tokens=False).items():
            if byte_level:
                lengths[idx] = len(piece)
            elif BYTE_PIECE.fullmatch(piece):
                lengths[idx] = 1
            else:
                lengths[idx] = len(piece.replace("\u2581", " ").encode("utf-8"))
        for idx, content in added.items():
            lengths[idx] = len(content.encode("utf-8"))
        return lengths
