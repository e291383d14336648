"""Bring your own tokenizer, shaped as the big public ones (tests/helpers/local_tokenizers.py, built
here, no hub): a folder as Llama 3's (byte-level BPE, 128,256 ids, a post-processor that puts
<|begin_of_text|> before every text) and one as Gemma's (SentencePiece-style BPE with byte
fallback, 256,000 ids, a normalizer that prepends "▁").

`data prepare` turns a corpus into token files that hold the text and only the text: no special
token (the post-processor's, which landed on every line), no "▁" a line gained by being encoded
on its own; the ids pass 65,535 and are stored as uint32; the ids decode to the training text,
byte for byte; and the bytes per token (bits per byte) add up to the text's UTF-8 bytes. A folder
with no tokenizer.json is refused in one line saying how to write one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tokenizers")

from local_tokenizers import byte_level_folder, sentencepiece_folder  # noqa: E402

from tlmsearch.cli import main  # noqa: E402
from tlmsearch.data.shards import PrepareConfig, held_out, prepare_tokens, separated  # noqa: E402
from tlmsearch.data.stream import load_token_files  # noqa: E402
from tlmsearch.data.tokenizer import BPETokenizer  # noqa: E402

WORDS = "whether tis nobler in the mind to suffer café naïve Größe 東京 résumé — “quoted”".split()
FOLDERS = {  # builder, vocabulary, special ids (Llama 3's 256 from 128,000; <unk> <s> </s>)
    "llama3": (byte_level_folder, 128_256, range(128_000, 128_256)),
    "gemma": (sentencepiece_folder, 256_000, range(3)),
}


def _docs() -> list[str]:
    rng = np.random.default_rng(1)
    lines = [" ".join(rng.choice(WORDS, size=12)) for _ in range(90)]
    return ["\n".join(lines[i : i + 3]) + "\n  indented line\tand a tab" for i in range(0, 90, 3)]


@pytest.mark.parametrize("shape", list(FOLDERS))
def test_a_big_public_tokenizers_folder_prepares_the_text_and_only_the_text(shape: str, tmp_path: Path) -> None:
    build, vocab, specials = FOLDERS[shape]
    docs = _docs()
    folder = build(tmp_path / shape, "\n".join(docs))
    source = tmp_path / "corpus.jsonl"
    source.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    out = tmp_path / "tokens"
    meta = prepare_tokens(PrepareConfig(source=str(source), out=str(out), tokenizer=str(folder), val_fraction=0.1))
    assert meta["vocab_size"] == vocab and meta["dtype"] == "uint32"
    data = load_token_files(out, 0.1)
    train = np.asarray(data.train)
    assert int(train.max()) > 65_535  # the learned tokens sit at the top ids
    tok = BPETokenizer(folder / "tokenizer.json")
    assert tok.encode("the mind")[0] == tok._tok.encode("the mind").ids[1]  # its post-processor adds a BOS
    text = "".join(separated(d) for i, d in enumerate(docs) if not held_out(i, 100_000))
    assert not np.isin(train, list(specials)).any()  # no BOS
    assert tok.decode(train) == text  # byte for byte: no space gained at a line's start
    prefix = 1 if shape == "gemma" else 0  # the one "▁" SentencePiece puts before a text
    assert int(np.asarray(meta["token_bytes"])[train].sum()) == len(text.encode("utf-8")) + prefix
    if shape == "llama3":  # a held-out document is a text of its own: exact too
        val = "".join(separated(d) for i, d in enumerate(docs) if held_out(i, 100_000))
        assert tok.decode(np.asarray(data.val)) == val


def test_a_folder_without_tokenizer_json_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "gpt2-slow"
    folder.mkdir()
    for name in ("vocab.json", "merges.txt", "tokenizer_config.json"):
        (folder / name).write_text("{}")
    source = tmp_path / "c.txt"
    source.write_text("a b\n\nc d\n")
    argv = ["data", "prepare", str(source), "--tokenizer", str(folder), "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no tokenizer.json" in err and "merges.txt" in err
    assert f"AutoTokenizer.from_pretrained({str(folder)!r}).save_pretrained(" in err


def test_tlmsearchs_own_bpe_encodes_as_before(tmp_path: Path) -> None:
    text = "\n".join(_docs())
    tok = BPETokenizer.train(text, 400, tmp_path / "tokenizer.json")
    lines = text.splitlines(keepends=True)  # the old encoding: line by line, the library's defaults
    before = [i for e in tok._tok.encode_batch(lines) for i in e.ids]
    assert tok.encode(text).tolist() == before and tok.decode(tok.encode(text)) == text
    assert int(np.asarray(tok.token_bytes())[before].sum()) == len(text.encode("utf-8"))
