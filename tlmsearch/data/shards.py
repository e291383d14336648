"""`tlmsearch data prepare SOURCE`: a corpus larger than memory streamed into token files.

    meta = prepare_tokens(PrepareConfig(source="corpus.jsonl", out="tokens/corpus"))
    # then: tlmsearch train --corpus tokens:tokens/corpus

The output folder is what `tokens:PATH` reads (`tlmsearch.data.stream.load_token_files`):

    OUT/train.bin, OUT/val.bin   flat token ids (uint16 up to a vocabulary of 65,536, else uint32)
    OUT/meta.json                vocab_size, token_bytes (bits per byte), tokenizer, counts, source
    OUT/tokenizer.json           the BPE trained here, or a copy of the one given

Memory stays bounded: documents (`tlmsearch.data.sources`) are gathered into batches of a few
MB, tokenized and appended to `train.bin.partial` / `val.bin.partial`. Every 128 MB of text a
checkpoint (`progress.json`: the source position, the documents and tokens written) follows a
sync of both files; run again after an interruption, the preparation truncates the partial
files to the checkpoint and continues from its position, never redoing what was checkpointed.
Only at the end are the partial files renamed and `meta.json` written (last): an interrupted
preparation leaves no `train.bin` that reads as whole.

The held-out split is by document: document i (0, 1, 2, ... in source order) is held out when
ceil(i f) < ceil((i + 1) f) for the validation share f (documents 0, 10, 20, ... at f = 0.1),
until the validation part holds `max_val_tokens`; every other document trains. Documents
are separated by a blank line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tlmsearch.data.sources import Position, Source, open_source
from tlmsearch.data.stream import _locked  # the cache's lock: one preparation per folder
from tlmsearch.data.tokenizer import BPETokenizer, ByteTokenizer, Tokenizer
from tlmsearch.errors import ConfigError, DataError

FORMAT = 1
CHECKPOINT_CHARS = 128 * 2**20  # text between two checkpoints
_OURS = ("train.bin", "val.bin", "meta.json", "tokenizer.json", "progress.json", ".lock")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PrepareConfig:
    """What `tlmsearch data prepare SOURCE` streams, and where to."""

    source: str
    out: str
    tokenizer: str = "byte"  # byte | bpe:VOCAB (trained on the first bpe_sample_mb of training text) | PATH
    text_field: str = "text"
    split: str = "train"  # a Hugging Face dataset's split
    val_fraction: float = 0.1
    max_val_tokens: int = 10_000_000  # 0: no cap
    bpe_sample_mb: int = 64
    batch_mb: int = 8  # text tokenized at once

    def __post_init__(self) -> None:
        if not 0.0 < self.val_fraction <= 0.5:
            raise ConfigError(f"--val-fraction {self.val_fraction} must lie in (0, 0.5]")
        if self.max_val_tokens < 0:
            raise ConfigError(f"--max-val-tokens {self.max_val_tokens} must be >= 0 (0: no cap)")
        if self.bpe_sample_mb < 1 or self.batch_mb < 1:
            raise ConfigError("--bpe-sample-mb and the batch size must be at least 1 (MB)")
        tokenizer_kind(self.tokenizer)  # a bad tokenizer: one line before anything is read


def tokenizer_kind(spec: str) -> tuple[str, int]:
    """('byte', 256) | ('bpe', VOCAB) | ('file', 0): what `--tokenizer` asks for."""
    if spec == "byte":
        return "byte", 256
    kind, _, vocab = spec.partition(":")
    if kind == "bpe" and vocab.isdigit() and 257 <= int(vocab) <= 65535:
        return "bpe", int(vocab)
    if kind == "bpe" and not vocab:
        return "bpe", 4096
    path = Path(spec).expanduser()
    if path.is_file() or (path / "tokenizer.json").is_file():
        return "file", 0
    if path.is_dir():
        held = ", ".join(sorted(p.name for p in path.iterdir())[:6]) or "nothing"
        raise ConfigError(
            f"--tokenizer {spec}: the folder has no tokenizer.json (it holds {held}); write one with transformers: "
            f"AutoTokenizer.from_pretrained({str(path)!r}).save_pretrained({str(path)!r})"
        )
    raise ConfigError(
        f"--tokenizer {spec!r} is not allowed: use byte, bpe:VOCAB (257-65535, trained on the corpus) "
        "or the path of a tokenizer.json (or of a folder holding one)"
    )


def token_dtype(vocab_size: int) -> type[np.unsignedinteger[Any]]:
    """The narrowest unsigned integer that holds every token id of a vocabulary."""
    return np.uint16 if vocab_size <= 2**16 else np.uint32


def held_out(index: int, val_ppm: int) -> bool:
    """Whether document `index` is held out at a validation share of `val_ppm` per million:
    ceil(i f) < ceil((i + 1) f), so document 0 is, and then one in 1/f (exactly ceil(n f) of n)."""
    return -(-index * val_ppm // 10**6) < -(-(index + 1) * val_ppm // 10**6)


def separated(text: str) -> str:
    """A document followed by a blank line (one it already ends with is kept)."""
    if text.endswith("\n\n"):
        return text
    return text + ("\n" if text.endswith("\n") else "\n\n")


# ----------------------------------------------------------------------------- token files


class TokenWriter:
    """Appends token arrays to `<name>.partial`; `finish` renames it to `<name>`."""

    def __init__(self, path: Path, dtype: type[np.unsignedinteger[Any]], start: int = 0) -> None:
        self.path, self.dtype = path, np.dtype(dtype)
        self.partial = path.with_name(path.name + ".partial")
        self.count = start
        self.fh = open(self.partial, "r+b" if start else "wb")  # noqa: SIM115 - closed in finish/close
        self.fh.truncate(start * self.dtype.itemsize)
        self.fh.seek(0, os.SEEK_END)

    def append(self, tokens: np.ndarray) -> None:
        self.fh.write(np.ascontiguousarray(tokens, dtype=self.dtype).tobytes())
        self.count += int(tokens.shape[0])

    def sync(self) -> None:
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()

    def finish(self) -> None:
        self.sync()
        self.fh.close()
        self.partial.replace(self.path)


# ----------------------------------------------------------------------------- preparation


def _tokenizer_file(spec: str) -> Path:
    path = Path(spec).expanduser()
    return path if path.is_file() else path / "tokenizer.json"


def fingerprint(cfg: PrepareConfig, source: Source) -> dict[str, Any]:
    """What the output depends on: the source's files (sizes, times), the field, the split and
    the tokenizer (a given tokenizer file by its checksum)."""
    kind, vocab = tokenizer_kind(cfg.tokenizer)
    tok: dict[str, Any] = {"kind": kind, "vocab": vocab}
    if kind == "bpe":
        tok["sample_mb"] = cfg.bpe_sample_mb
    if kind == "file":
        tok["sha256"] = hashlib.sha256(_tokenizer_file(cfg.tokenizer).read_bytes()).hexdigest()
    return {
        "format": FORMAT,
        **source.fingerprint(),
        "tokenizer": tok,
        "val_fraction": cfg.val_fraction,
        "max_val_tokens": cfg.max_val_tokens,
    }


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _write_json(path: Path, value: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=1) + "\n")
    tmp.replace(path)


def check_out(out: Path, fp: dict[str, Any]) -> dict[str, Any] | None:
    """The meta of a finished preparation of the same fingerprint in `out` (nothing to do), else
    None; an `out` that holds something else is refused in one line."""
    if out.exists() and not out.is_dir():
        raise DataError(f"--out {out} is a file; give a folder (new, or one this command wrote)")
    if not out.is_dir():
        return None
    meta = _read_json(out / "meta.json")
    if meta is not None and meta.get("prepared_from") == fp:
        return meta
    if meta is not None:
        raise DataError(
            f"--out {out} holds tokens prepared from {meta.get('source', 'another source')} or with other "
            "settings; choose another folder or delete it"
        )
    strangers = sorted(
        p.name for p in out.iterdir() if p.name not in _OURS and not p.name.endswith((".partial", ".tmp"))
    )
    if strangers:
        shown = ", ".join(strangers[:3]) + (", ..." if len(strangers) > 3 else "")
        raise DataError(f"--out {out} is a folder with other files ({shown}); give a new or empty folder")
    return None


def prepare_tokens(
    cfg: PrepareConfig,
    *,
    progress: Callable[[float, int, bool], None] | None = None,
    total: Callable[[Source], None] | None = None,
) -> dict[str, Any]:
    """Stream `cfg.source` into token files in `cfg.out` (see the module's docstring) and
    return their `meta.json` (with `"already": True` when `cfg.out` held them already).
    `total(source)` is called once the source is open; `progress(done, tokens, final)` as it goes."""
    source = open_source(cfg.source, text_field=cfg.text_field, split=cfg.split)
    fp = fingerprint(cfg, source)
    out = Path(cfg.out).expanduser()
    finished = check_out(out, fp)
    if finished is not None:
        return {**finished, "already": True}
    if total is not None:
        total(source)
    out.mkdir(parents=True, exist_ok=True)
    with _locked(out / ".lock"):
        return _prepare_locked(cfg, source, fp, out, progress or (lambda d, t, f: None))


def _resume_point(out: Path, fp: dict[str, Any], itemsize: int | None) -> dict[str, Any] | None:
    state = _read_json(out / "progress.json")
    if state is None or state.get("prepared_from") != fp or itemsize is None:
        return None
    for part in ("train", "val"):  # a partial file shorter than its checkpoint: start again
        path = out / f"{part}.bin.partial"
        if not path.is_file() or path.stat().st_size < int(state[f"{part}_tokens"]) * itemsize:
            return None
    return state


def _prepare_locked(
    cfg: PrepareConfig, source: Source, fp: dict[str, Any], out: Path, progress: Callable[[float, int, bool], None]
) -> dict[str, Any]:
    kind, _ = tokenizer_kind(cfg.tokenizer)
    saved_tok = out / "tokenizer.json"
    tok: Tokenizer | None = None
    if kind == "byte":
        tok = ByteTokenizer()
    elif saved_tok.is_file() and (out / "progress.json").is_file():
        tok = BPETokenizer(saved_tok)
    state = _resume_point(out, fp, np.dtype(token_dtype(tok.vocab_size)).itemsize if tok else None)
    if state is None:  # start afresh: whatever a killed preparation left goes
        for stale in ("progress.json", "train.bin", "val.bin", "tokenizer.json"):
            (out / stale).unlink(missing_ok=True)
            (out / f"{stale}.partial").unlink(missing_ok=True)
        tok = _make_tokenizer(cfg, source, kind, saved_tok)
    assert tok is not None
    dtype = token_dtype(tok.vocab_size)
    start = Position.from_dict(state["position"]) if state else Position()
    docs = int(state["documents"]) if state else 0
    train = TokenWriter(out / "train.bin", dtype, int(state["train_tokens"]) if state else 0)
    val = TokenWriter(out / "val.bin", dtype, int(state["val_tokens"]) if state else 0)
    val_ppm = round(cfg.val_fraction * 10**6)
    cap = cfg.max_val_tokens or None
    batch_chars = cfg.batch_mb * 2**20 // (4 if kind != "byte" else 1)  # a BPE's encodings weigh more
    pending: list[str] = []
    pending_chars = since_checkpoint = 0

    def flush() -> None:
        nonlocal pending, pending_chars
        if pending:
            train.append(tok.encode("".join(pending)))
        pending, pending_chars = [], 0

    def checkpoint(position: Position) -> None:
        flush()
        train.sync()
        val.sync()
        _write_json(out / "progress.json", {
            "prepared_from": fp, "position": position.to_dict(), "documents": docs,
            "train_tokens": train.count, "val_tokens": val.count,
        })  # fmt: skip

    done = 0.0
    try:
        for doc in source.documents(start):
            text = separated(doc.text)
            if held_out(docs, val_ppm) and (cap is None or val.count < cap):
                val.append(tok.encode(text))
            else:
                pending.append(text)
                pending_chars += len(text)
                if pending_chars >= batch_chars:
                    flush()
            docs += 1
            since_checkpoint += len(text)
            done = doc.done
            if since_checkpoint >= CHECKPOINT_CHARS:
                checkpoint(doc.after)
                since_checkpoint = 0
            progress(done, train.count + val.count, False)
        flush()
    except BaseException:
        train.close()
        val.close()
        raise
    if train.count == 0 or val.count == 0:
        train.close()
        val.close()
        part = "training" if train.count == 0 else "validation"
        raise DataError(
            f"{cfg.source}: {docs} document(s) gave no {part} tokens; a corpus needs at least two non-empty "
            f"documents (one in {round(1 / cfg.val_fraction)} is held out)"
        )
    progress(1.0, train.count + val.count, True)
    train.finish()
    val.finish()
    meta = {
        "source": cfg.source,
        "tokenizer": tok.name,
        "vocab_size": int(tok.vocab_size),
        "dtype": np.dtype(dtype).name,
        "train_tokens": train.count,
        "val_tokens": val.count,
        "documents": docs,
        "token_bytes": [int(b) for b in tok.token_bytes()],
        "prepared_from": fp,
    }
    _write_json(out / "meta.json", meta)  # last: the folder reads as whole from here on
    (out / "progress.json").unlink(missing_ok=True)
    return meta


def _training_texts(source: Source, val_ppm: int, limit_chars: int) -> Iterator[str]:
    """The first `limit_chars` of training text (held-out documents skipped), in pieces."""
    seen = 0
    for i, doc in enumerate(source.documents(Position())):
        if held_out(i, val_ppm):
            continue
        yield doc.text
        seen += len(doc.text)
        if seen >= limit_chars:
            return


def _make_tokenizer(cfg: PrepareConfig, source: Source, kind: str, saved: Path) -> Tokenizer:
    if kind == "byte":
        return ByteTokenizer()
    if kind == "file":
        given = _tokenizer_file(cfg.tokenizer)
        try:
            tok = BPETokenizer(given)
        except Exception as exc:  # noqa: BLE001 - the tokenizers library raises anything on a bad file
            raise DataError(f"--tokenizer {given}: not a readable tokenizer.json ({str(exc)[:120]})") from None
        shutil.copyfile(given, saved)
        return tok
    _, vocab = tokenizer_kind(cfg.tokenizer)
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers

    hf = HFTokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False, special_tokens=[]
    )
    texts = _training_texts(source, round(cfg.val_fraction * 10**6), cfg.bpe_sample_mb * 2**20)
    hf.train_from_iterator(texts, trainer=trainer)
    tmp = saved.with_name("tokenizer.json.tmp")
    hf.save(str(tmp))
    tmp.replace(saved)
    return BPETokenizer(saved)


def source_slug(spec: str) -> str:
    """A folder name for a streamed source: its last name and a hash of its resolved spec."""
    kind, sep, rest = spec.partition(":")
    if not (sep and kind in ("hf", "text", "jsonl", "parquet")):
        kind, rest = "", spec
    resolved = rest if kind == "hf" and not Path(rest).expanduser().exists() else str(Path(rest).expanduser().resolve())
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(resolved).name or resolved)[-40:].strip("-.") or "source"
    return f"{name}-{hashlib.sha1(f'{kind}:{resolved}'.encode()).hexdigest()[:8]}"


def describe(meta: dict[str, Any], out: Path) -> str:
    """What `tlmsearch data prepare` prints at the end."""
    head = "already prepared" if meta.get("already") else "prepared"
    return (
        f"{head}: {meta['source']} ({meta['tokenizer']}, vocab {meta['vocab_size']}): "
        f"{meta['train_tokens']:,} training and {meta['val_tokens']:,} validation tokens "
        f"from {meta['documents']:,} documents\n"
        f"  in {out}\n  train on it with: --corpus tokens:{out}"
    )
