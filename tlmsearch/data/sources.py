"""Large corpora read as a stream of documents: text files, JSONL, Parquet, Hugging Face datasets.

    source = open_source("corpus/")           # a folder of .txt/.md/.jsonl/.parquet files
    for doc in source.documents(Position()):  # each with the position just after it
        ...

What `tlmsearch data prepare SOURCE` reads (`tlmsearch.data.shards`). Nothing is held whole:
text and JSONL files are read line by line, Parquet files batch by batch, a Hugging Face
dataset (Arrow, memory-mapped by `datasets`) batch by batch. A document is one JSONL record's
or one Parquet/dataset row's text field, or a block of whole lines of a text file (cut at a
blank line once it holds 64 KiB, at any line past 1 MiB). Every document carries the
position just after it (file, byte offset or row, line), so that a preparation stopped at a
checkpoint continues exactly there.

Bad input is one `DataError` naming the file and the line (or row): a missing file, a line
that is not JSON, a record without the text field, a text field that is not a string.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tlmsearch.errors import DataError

TEXT_SUFFIXES = (".txt", ".md")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet",)
KINDS = ("text", "jsonl", "parquet")

_BLOCK_SOFT = 64 * 1024  # a text document ends at the first blank line past this many bytes
_BLOCK_HARD = 1024 * 1024  # ... or at the first line past this many
_ROW_BATCH = 1024
DATASETS_HINT = (
    "pip install datasets (or write the dataset to Parquet or JSONL and prepare that file: "
    "ds.to_parquet('corpus.parquet'))"
)


@dataclasses.dataclass(frozen=True)
class Position:
    """Where a source stands: the file (index in the source's sorted list), the byte offset in
    it (text, JSONL) or the rows read (Parquet, datasets), and the lines read (JSONL)."""

    file: int = 0
    offset: int = 0
    line: int = 0

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Position:
        return cls(file=int(d["file"]), offset=int(d["offset"]), line=int(d["line"]))


@dataclasses.dataclass(frozen=True)
class Document:
    text: str
    after: Position  # the position just after this document
    done: float  # the share of the source read once this document is, in [0, 1]


@dataclasses.dataclass(frozen=True)
class FileEntry:
    path: Path
    kind: str  # "text", "jsonl" or "parquet"
    size: int  # bytes
    mtime_ns: int


class Source:
    """A source of documents; `fingerprint` says what it is (files, sizes, times, the field)."""

    spec: str
    unit: str  # what `total` counts: "B" (bytes) or "rows"
    total: int

    def fingerprint(self) -> dict[str, Any]:
        raise NotImplementedError

    def documents(self, start: Position) -> Iterator[Document]:
        raise NotImplementedError


# ----------------------------------------------------------------------------- files


def _kind(path: Path) -> str | None:
    name = path.name.lower()
    for kind, suffixes in (("text", TEXT_SUFFIXES), ("jsonl", JSONL_SUFFIXES), ("parquet", PARQUET_SUFFIXES)):
        if name.endswith(suffixes):
            return kind
    return None


def _entry(path: Path, kind: str) -> FileEntry:
    st = path.stat()
    return FileEntry(path, kind, int(st.st_size), int(st.st_mtime_ns))


class FileSource(Source):
    """A file, or a folder of files (recursively, sorted by path), each read by its suffix."""

    unit = "B"

    def __init__(self, spec: str, path: Path, text_field: str = "text", kind: str | None = None) -> None:
        self.spec, self.root, self.text_field = spec, path, text_field
        if not path.exists():
            raise DataError(f"{spec}: no such file or folder")
        allowed = ", ".join(TEXT_SUFFIXES + JSONL_SUFFIXES + PARQUET_SUFFIXES)
        if path.is_file():
            found = kind or _kind(path)
            if found is None:
                raise DataError(
                    f"{spec}: cannot tell the format of {path.name}; name it {allowed}, "
                    "or prefix the path with text:, jsonl: or parquet:"
                )
            self.files = [_entry(path, found)]
        else:
            # a folder named with its format (jsonl:DIR) reads only the files of that format
            files = sorted(p for p in path.rglob("*") if p.is_file() and _kind(p) in ((kind,) if kind else KINDS))
            if not files:
                raise DataError(f"{spec}: the folder holds no {allowed} files")
            self.files = [_entry(p, str(_kind(p))) for p in files]
        if any(f.kind == "parquet" for f in self.files):
            _pyarrow(spec)
            for f in self.files:
                if f.kind == "parquet":
                    _parquet_column(f.path, text_field)  # a missing column: refused before anything is written
        self.total = sum(f.size for f in self.files)

    def fingerprint(self) -> dict[str, Any]:
        return {
            "source": self.spec,
            "text_field": self.text_field,
            "files": [[str(f.path), f.kind, f.size, f.mtime_ns] for f in self.files],
        }

    def documents(self, start: Position) -> Iterator[Document]:
        before = sum(f.size for f in self.files[: start.file])
        for i in range(start.file, len(self.files)):
            entry = self.files[i]
            begin = start if i == start.file else Position(file=i)
            reader = {"text": _text_docs, "jsonl": self._jsonl_docs, "parquet": self._parquet_docs}[entry.kind]
            for text, offset, line, done_bytes in reader(entry, begin):
                done = (before + done_bytes) / self.total if self.total else 1.0
                yield Document(text, Position(i, offset, line), min(done, 1.0))
            before += entry.size

    def _jsonl_docs(self, entry: FileEntry, begin: Position) -> Iterator[tuple[str, int, int, int]]:
        field, line = self.text_field, begin.line
        with _open_binary(entry.path) as fh:
            fh.seek(begin.offset)
            for raw in fh:
                line += 1
                if not raw.strip():
                    continue
                try:
                    record = json.loads(raw)
                except ValueError as exc:  # UnicodeDecodeError too
                    reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
                    raise DataError(f"{entry.path}:{line}: not a JSON line ({reason})") from None
                if not isinstance(record, dict) or field not in record:
                    found = ", ".join(map(str, record)) if isinstance(record, dict) else type(record).__name__
                    raise DataError(
                        f"{entry.path}:{line}: no {field!r} field (found: {found or 'nothing'}); "
                        "choose the field with --text-field"
                    )
                text = record[field]
                if text is None:
                    continue
                if not isinstance(text, str):
                    raise DataError(f"{entry.path}:{line}: field {field!r} is a {type(text).__name__}, not a string")
                offset = fh.tell()
                if text:
                    yield text, offset, line, offset

    def _parquet_docs(self, entry: FileEntry, begin: Position) -> Iterator[tuple[str, int, int, int]]:
        import pyarrow.parquet as pq

        try:
            # pre_buffer (pyarrow's default) keeps every column chunk read so far: a 1 GB file
            # held 1 GB; without it memory stays at one row group
            pf = pq.ParquetFile(entry.path, pre_buffer=False)
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors for a damaged file vary
            raise DataError(f"{entry.path}: not a readable Parquet file ({_first_line(exc)})") from None
        rows_total = max(int(pf.metadata.num_rows), 1)
        batches = (b.column(0).to_pylist() for b in pf.iter_batches(batch_size=_ROW_BATCH, columns=[self.text_field]))
        for text, row in _row_texts(batches, begin.offset, str(entry.path), self.text_field):
            yield text, row, 0, entry.size * row // rows_total


def _row_texts(batches: Iterable[Sequence[Any]], skip: int, where: str, field: str) -> Iterator[tuple[str, int]]:
    """The texts of a table's rows read batch by batch (Parquet, datasets), each with its row
    number (from 1), after the first `skip` rows; empty and null rows are passed over, a value
    that is not a string is refused naming `where` and the row."""
    row = 0
    for values in batches:
        if row + len(values) <= skip:
            row += len(values)
            continue
        for value in values:
            row += 1
            if row <= skip or not value:
                continue
            if not isinstance(value, str):
                raise DataError(f"{where}: row {row}: field {field!r} is not a string")
            yield value, row


def _text_docs(entry: FileEntry, begin: Position) -> Iterator[tuple[str, int, int, int]]:
    """Blocks of whole lines: cut at a blank line past 64 KiB, at any line past 1 MiB."""
    lines: list[bytes] = []
    size, line = 0, begin.line
    with _open_binary(entry.path) as fh:
        fh.seek(begin.offset)
        start_line = line
        for raw in fh:
            line += 1
            lines.append(raw)
            size += len(raw)
            if size >= _BLOCK_HARD or (size >= _BLOCK_SOFT and not raw.strip()):
                offset = fh.tell()
                yield _decode(entry.path, b"".join(lines), start_line), offset, line, offset
                lines, size, start_line = [], 0, line
        if lines:
            yield _decode(entry.path, b"".join(lines), start_line), entry.size, line, entry.size


def _decode(path: Path, data: bytes, start_line: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = start_line + data[: exc.start].count(b"\n") + 1
        raise DataError(f"{path}:{line}: not UTF-8 text ({exc.reason})") from None


def _open_binary(path: Path) -> Any:
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller's with closes it
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None


def _pyarrow(spec: str) -> None:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise DataError(f"{spec}: reading Parquet needs pyarrow: pip install pyarrow") from None


def _parquet_column(path: Path, field: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception as exc:  # noqa: BLE001
        raise DataError(f"{path}: not a readable Parquet file ({_first_line(exc)})") from None
    if field not in schema.names:
        raise DataError(
            f"{path}: no {field!r} column (found: {', '.join(schema.names)}); choose the column with --text-field"
        )
    kind = schema.field(field).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise DataError(f"{path}: column {field!r} holds {kind}, not strings; choose the column with --text-field")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


# ----------------------------------------------------------------------------- Hugging Face datasets


class HFSource(Source):
    """`hf:PATH` (a folder written by `Dataset.save_to_disk`) or `hf:NAME[:CONFIG]` (a dataset
    in the local Hugging Face cache, or one `datasets` may download), its `split`."""

    unit = "rows"

    def __init__(self, spec: str, text_field: str = "text", split: str = "train") -> None:
        self.spec, self.text_field, self.split = spec, text_field, split
        name = spec[len("hf:") :]
        try:
            import datasets  # type: ignore[import-not-found]
        except ImportError:
            raise DataError(f"{spec} needs the `datasets` library: {DATASETS_HINT}") from None
        try:
            if Path(name).expanduser().is_dir():
                ds = datasets.load_from_disk(str(Path(name).expanduser()))
                self.name, self.config = str(Path(name).expanduser().resolve()), ""
            else:
                self.name, _, self.config = name.partition(":")
                ds = datasets.load_dataset(self.name, self.config or None, split=split)
        except Exception as exc:  # noqa: BLE001 - offline, unknown name, ...: one line for the user
            raise DataError(
                f"{spec}: cannot load ({_first_line(exc)}); it needs a local cache (HF_DATASETS_OFFLINE=1 "
                "reads only that) or a network"
            ) from None
        if hasattr(ds, "column_names") and isinstance(ds.column_names, dict):  # a DatasetDict
            if split not in ds:
                raise DataError(f"{spec}: no {split!r} split (found: {', '.join(ds)}); choose one with --split")
            ds = ds[split]
        if text_field not in ds.column_names:
            raise DataError(
                f"{spec}: no {text_field!r} column (found: {', '.join(ds.column_names)}); "
                "choose the column with --text-field"
            )
        self.ds = ds
        self.total = int(ds.num_rows)
        self._fingerprint = str(getattr(ds, "_fingerprint", ""))

    def fingerprint(self) -> dict[str, Any]:
        return {"source": self.spec, "text_field": self.text_field, "split": self.split, "rows": self.total,
                "dataset": self._fingerprint}  # fmt: skip

    def documents(self, start: Position) -> Iterator[Document]:
        ds = self.ds.select_columns([self.text_field])
        batches = (batch[self.text_field] for batch in ds.iter(batch_size=_ROW_BATCH))
        for text, row in _row_texts(batches, start.offset, self.spec, self.text_field):
            yield Document(text, Position(0, row, 0), row / self.total if self.total else 1.0)


# ----------------------------------------------------------------------------- entry point


def open_source(spec: str, *, text_field: str = "text", split: str = "train") -> Source:
    """The source of `spec`: a path (file or folder; the format by suffix), `text:PATH`,
    `jsonl:PATH`, `parquet:PATH` (the format named), or `hf:NAME[:CONFIG]` / `hf:PATH`."""
    if not text_field:
        raise DataError("--text-field must not be empty; e.g. text")
    if spec.startswith("hf:"):
        return HFSource(spec, text_field, split)
    kind, sep, rest = spec.partition(":")
    if sep and kind in KINDS and not os.path.exists(spec):
        return FileSource(spec, Path(rest).expanduser(), text_field, kind)
    return FileSource(spec, Path(spec).expanduser(), text_field)
