"""`tlmsearch data prepare SOURCE`: large corpora streamed into token files (tlmsearch.data.shards)."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tlmsearch.cli import main
from tlmsearch.data import shards
from tlmsearch.data.progress_bar import bar_line
from tlmsearch.data.shards import PrepareConfig, held_out, prepare_tokens, separated
from tlmsearch.data.sources import Position, open_source
from tlmsearch.data.stream import load_token_files
from tlmsearch.errors import ConfigError, DataError

DOCS = [f"document {i}: " + "word " * (i % 7 + 1) + ("é" if i % 3 == 0 else "") for i in range(23)]


def _jsonl(path: Path, docs: list[str] = DOCS) -> Path:
    path.write_text("".join(json.dumps({"id": i, "text": d}) + "\n" for i, d in enumerate(docs)))
    return path


def _expected(docs: list[str], val_every: int = 10) -> tuple[bytes, bytes]:
    """Train and validation bytes worked out by hand: documents 0, 10, 20 held out, each
    followed by a blank line."""
    val = b"".join((d + "\n\n").encode() for i, d in enumerate(docs) if i % val_every == 0)
    train = b"".join((d + "\n\n").encode() for i, d in enumerate(docs) if i % val_every != 0)
    return train, val


def _read(out: Path, part: str) -> bytes:
    return np.fromfile(out / f"{part}.bin", dtype=np.uint16).astype(np.uint8).tobytes()


def test_held_out_documents_are_one_in_ten_from_the_first() -> None:
    assert [i for i in range(25) if held_out(i, 100_000)] == [0, 10, 20]
    assert [i for i in range(9) if held_out(i, 250_000)] == [0, 4, 8]
    assert sum(held_out(i, 10_000) for i in range(1000)) == 10  # ceil(n f) of n, f = 0.01


def test_documents_end_with_one_blank_line() -> None:
    assert separated("a") == "a\n\n" and separated("a\n") == "a\n\n" and separated("a\n\n") == "a\n\n"


def test_jsonl_streams_into_token_files_the_trainer_reads(tmp_path: Path) -> None:
    out = tmp_path / "out"
    meta = prepare_tokens(PrepareConfig(source=str(_jsonl(tmp_path / "c.jsonl")), out=str(out)))
    train, val = _expected(DOCS)
    assert _read(out, "train") == train and _read(out, "val") == val
    assert (meta["train_tokens"], meta["val_tokens"], meta["documents"]) == (len(train), len(val), 23)
    assert sorted(p.name for p in out.iterdir()) == [".lock", "meta.json", "train.bin", "val.bin"]
    data = load_token_files(out, 0.1)  # what --corpus tokens:OUT reads
    assert data.vocab_size == 256 and data.token_bytes is not None and data.token_bytes.tolist() == [1] * 256
    assert bytes(np.asarray(data.train, dtype=np.uint8)) == train
    again = prepare_tokens(PrepareConfig(source=str(tmp_path / "c.jsonl"), out=str(out)))
    assert again["already"] is True  # nothing redone


def test_text_folder_and_parquet_give_the_same_documents(tmp_path: Path) -> None:
    folder = tmp_path / "texts"
    folder.mkdir()
    for i, d in enumerate(DOCS):  # one file a document (each under 64 KiB: one block)
        (folder / f"{i:03d}.txt").write_text(d + "\n")
    prepare_tokens(PrepareConfig(source=str(folder), out=str(tmp_path / "t")))
    train, val = _expected(DOCS)
    assert _read(tmp_path / "t", "train") == train and _read(tmp_path / "t", "val") == val
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"body": DOCS, "n": list(range(23))}), tmp_path / "c.parquet", row_group_size=5)
    prepare_tokens(PrepareConfig(source=str(tmp_path / "c.parquet"), out=str(tmp_path / "p"), text_field="body"))
    assert _read(tmp_path / "p", "train") == train and _read(tmp_path / "p", "val") == val


def test_a_large_text_file_is_cut_into_blocks_at_blank_lines(tmp_path: Path) -> None:
    para = ("x" * 99 + "\n") * 100 + "\n"  # 10,001 bytes, ending in a blank line
    (tmp_path / "big.txt").write_text(para * 30)
    docs = list(open_source(str(tmp_path / "big.txt")).documents(Position()))
    # a block ends at the first blank line past 64 KiB: 7 paragraphs (70,007 bytes), then the rest
    assert [len(d.text) for d in docs] == [7 * 10_001] * 4 + [2 * 10_001]
    assert docs[-1].done == 1.0 and "".join(d.text for d in docs) == para * 30


def test_max_val_tokens_caps_the_held_out_part(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "c.jsonl")
    meta = prepare_tokens(PrepareConfig(source=str(src), out=str(tmp_path / "o"), max_val_tokens=5))
    first = (DOCS[0] + "\n\n").encode()
    assert _read(tmp_path / "o", "val") == first  # document 10 trains once the cap is reached
    assert meta["train_tokens"] == sum(len((d + "\n\n").encode()) for d in DOCS) - len(first)


def test_an_interrupted_prepare_leaves_no_whole_looking_file_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = [f"doc {i} " + "abc " * 50 for i in range(60)]
    src, out = _jsonl(tmp_path / "c.jsonl", docs), tmp_path / "o"
    monkeypatch.setattr(shards, "CHECKPOINT_CHARS", 1000)  # a checkpoint every ~5 documents
    real = type(open_source(str(src))).documents
    read: list[int] = []

    def dying(self: Any, start: Position) -> Any:
        for n, doc in enumerate(real(self, start)):
            read.append(n)
            if n == 33 and start == Position():
                raise KeyboardInterrupt
            yield doc

    monkeypatch.setattr(type(open_source(str(src))), "documents", dying)
    with pytest.raises(KeyboardInterrupt):
        prepare_tokens(PrepareConfig(source=str(src), out=str(out)))
    assert not (out / "train.bin").exists() and not (out / "meta.json").exists()
    assert (out / "train.bin.partial").exists() and (out / "progress.json").exists()
    with pytest.raises(DataError, match="no train.bin"):
        load_token_files(out, 0.1)
    checkpointed = json.loads((out / "progress.json").read_text())["documents"]
    assert 25 <= checkpointed <= 33
    read.clear()
    prepare_tokens(PrepareConfig(source=str(src), out=str(out)))
    assert len(read) == 60 - checkpointed  # only what the checkpoint had not kept is read again
    train, val = _expected(docs)
    assert _read(out, "train") == train and _read(out, "val") == val
    assert not (out / "progress.json").exists() and not (out / "train.bin.partial").exists()


def test_bpe_trained_on_the_corpus_and_a_given_tokenizer_file(tmp_path: Path) -> None:
    docs = [f"the quick brown fox {i} jumps over the lazy dog " * 5 for i in range(40)]
    src = _jsonl(tmp_path / "c.jsonl", docs)
    meta = prepare_tokens(PrepareConfig(source=str(src), out=str(tmp_path / "b"), tokenizer="bpe:300"))
    assert meta["vocab_size"] == 300 and meta["tokenizer"] == "bpe300"
    data = load_token_files(tmp_path / "b", 0.1)
    assert data.vocab_size == 300 and int(data.train.max()) < 300
    assert data.token_bytes is not None and int(data.token_bytes.sum()) > 300  # merges span several bytes
    from tlmsearch.data.tokenizer import BPETokenizer

    tok = BPETokenizer(tmp_path / "b" / "tokenizer.json")
    assert tok.decode(np.asarray(data.val)) == "".join(docs[i] + "\n\n" for i in (0, 10, 20, 30))
    again = prepare_tokens(
        PrepareConfig(source=str(src), out=str(tmp_path / "f"), tokenizer=str(tmp_path / "b" / "tokenizer.json"))
    )
    assert again["train_tokens"] == meta["train_tokens"]
    assert np.array_equal(np.fromfile(tmp_path / "f" / "train.bin", np.uint16), np.asarray(data.train))


def test_an_out_folder_of_something_else_is_refused(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "c.jsonl")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.txt").write_text("mine")
    with pytest.raises(DataError, match="other files"):
        prepare_tokens(PrepareConfig(source=str(src), out=str(tmp_path / "home")))
    prepare_tokens(PrepareConfig(source=str(src), out=str(tmp_path / "o")))
    with pytest.raises(DataError, match="other settings"):
        prepare_tokens(PrepareConfig(source=str(src), out=str(tmp_path / "o"), val_fraction=0.2))


def test_bad_settings_are_one_config_error() -> None:
    with pytest.raises(ConfigError, match="--tokenizer 'bpe:9'"):
        PrepareConfig(source="x", out="y", tokenizer="bpe:9")
    with pytest.raises(ConfigError, match="--val-fraction"):
        PrepareConfig(source="x", out="y", val_fraction=0.9)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"text": "fine"}\n{"text": broken\n', "c.jsonl:2: not a JSON line"),
        ('{"text": "fine"}\n\n{"body": "x"}\n', "c.jsonl:3: no 'text' field (found: body)"),
        ('{"text": 3}\n', "c.jsonl:1: field 'text' is a int, not a string"),
        ("[1, 2]\n", "c.jsonl:1: no 'text' field (found: list)"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    (tmp_path / "c.jsonl").write_text(content)
    assert main(["data", "prepare", str(tmp_path / "c.jsonl"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "o" / "train.bin").exists()


def test_cli_missing_source_and_bad_parquet_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.jsonl"
    assert main(["data", "prepare", str(missing), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == f"tlmsearch data: error: {missing}: no such file or folder"
    (tmp_path / "x.csv").write_text("a,b\n")
    assert main(["data", "prepare", str(tmp_path / "x.csv")]) == 2
    assert "cannot tell the format of x.csv" in capsys.readouterr().err
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"body": ["a"]}), tmp_path / "c.parquet")
    assert main(["data", "prepare", str(tmp_path / "c.parquet"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no 'text' column (found: body)" in err[0]


def test_cli_prepares_into_the_cache_and_says_how_to_train(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _jsonl(tmp_path / "c.jsonl")
    assert main(["data", "prepare", str(src), "--cache-dir", str(tmp_path / "cache"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["corpus"].startswith(f"tokens:{tmp_path / 'cache' / 'tokens' / 'c.jsonl-'}")
    assert info["corpus"].endswith("-byte") and info["documents"] == 23


def test_hf_without_datasets_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(DataError, match=r"needs the `datasets` library: pip install datasets"):
        open_source("hf:wikitext:wikitext-2-raw-v1")


ROWS = ["a", "", None, "b", "c"]  # rows 1..5: rows 2 and 3 hold no text


def _fake_datasets(monkeypatch: pytest.MonkeyPatch, rows: list[Any]) -> None:
    """A stand-in for `datasets` (`load_from_disk`, `iter`) whose saved dataset holds `rows` in
    its text column."""

    class Rows:
        column_names = ["text", "id"]
        num_rows = len(rows)
        _fingerprint = "abc"

        def select_columns(self, cols: list[str]) -> Rows:
            return self

        def iter(self, batch_size: int) -> Any:
            for i in range(0, len(rows), batch_size):
                yield {"text": rows[i : i + batch_size]}

    fake = types.ModuleType("datasets")
    fake.load_from_disk = lambda path: Rows()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "datasets", fake)


def test_hf_dataset_from_a_local_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`datasets` is not installed here: a stand-in with its calls (`_fake_datasets`)."""
    _fake_datasets(monkeypatch, DOCS)
    (tmp_path / "saved").mkdir()
    meta = prepare_tokens(PrepareConfig(source=f"hf:{tmp_path / 'saved'}", out=str(tmp_path / "o")))
    train, val = _expected(DOCS)
    assert _read(tmp_path / "o", "train") == train and meta["documents"] == 23


def test_the_progress_line() -> None:
    line = bar_line(0.42, 1_000_000_000, "B", 117_000_000, 34.0)
    assert line == "prepare  42% [########............]  420/1,000 MB  12.4 MB/s  117M tokens  eta 47s"
    assert bar_line(1.0, 500, "rows", 9, 3.0).endswith("500/500 rows  167 rows/s  9 tokens  3s")


def test_parquet_is_read_one_row_group_at_a_time(tmp_path: Path) -> None:
    """pyarrow's pre_buffer kept every column chunk read (a 1 GB file held 1 GB, bench_prepare):
    what Arrow holds while the documents stream stays near one row group, not the file."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    with pq.ParquetWriter(tmp_path / "c.parquet", pa.schema([("text", pa.string())])) as writer:
        for _ in range(40):  # 40 row groups of 200 documents of random letters: 8 MB, incompressible
            letters = rng.integers(97, 123, size=(200, 1000), dtype=np.uint8)
            writer.write_table(pa.table({"text": [row.tobytes().decode() for row in letters]}))
    held, n = 0, 0
    for doc in open_source(str(tmp_path / "c.parquet")).documents(Position()):
        n += len(doc.text) == 1000
        held = max(held, pa.total_allocated_bytes())
    assert n == 8000 and held < 2_000_000, held  # one row group is 200 kB of text


def test_table_rows_resume_after_the_rows_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parquet and datasets rows, read two at a time: batches [a, ""], [None, b], [c]. From the
    start the texts are rows 1, 4, 5; after 1 row, row 1 is passed over inside its batch (4, 5);
    after 3 the first batch is passed over whole and row 3 is empty (4, 5); after 4, only 5."""
    monkeypatch.setattr("tlmsearch.data.sources._ROW_BATCH", 2)
    _fake_datasets(monkeypatch, ROWS)
    (tmp_path / "saved").mkdir()
    sources = [open_source(f"hf:{tmp_path / 'saved'}")]
    if importlib.util.find_spec("pyarrow") is not None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"text": pa.array(ROWS, pa.string())}), tmp_path / "c.parquet", row_group_size=2)
        sources.append(open_source(str(tmp_path / "c.parquet")))
    for source in sources:
        read = {k: [(d.text, d.after.offset) for d in source.documents(Position(offset=k))] for k in (0, 1, 3, 4)}
        rest = [("b", 4), ("c", 5)]
        assert read == {0: [("a", 1), *rest], 1: rest, 3: rest, 4: [("c", 5)]}, source.spec
    assert [d.done for d in sources[0].documents(Position())] == [1 / 5, 4 / 5, 1.0]


def test_a_dataset_row_that_is_not_a_string_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_datasets(monkeypatch, ["a", 3])
    (tmp_path / "saved").mkdir()
    spec = f"hf:{tmp_path / 'saved'}"
    with pytest.raises(DataError) as info:
        list(open_source(spec).documents(Position()))
    assert str(info.value) == f"{spec}: row 2: field 'text' is not a string"
