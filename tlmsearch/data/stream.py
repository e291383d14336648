"""Token streams cached as memory-mapped arrays, fixed validation windows, and batches.

`prepare(data_cfg)` turns a corpus into two flat `uint16` arrays (train, val) stored under the
cache directory:

    <cache>/corpora/<corpus-slug>/<tokenizer>-<sha256[:12]>/
        train.bin  val.bin  meta.json  [tokenizer.json]

The folder is keyed by the checksum of the extracted text, so a changed source gives a new
folder (and a warning); `meta.json` records the checksum, sizes and vocabulary. Preparation
holds a file lock, so parallel trials tokenize a corpus once. Every file is written to a
temporary name and renamed, and `meta.json` last: a folder without it (a preparation killed
half-way) is never used. A prepared folder is derived data, checked before use (its
`meta.json` parses and matches the source, the .bin sizes match it, token ids are below the
vocabulary): a damaged one is prepared again from the source, with one line on stderr.
`tokens:PATH` corpora are used in place (memory-mapped, never copied).

Validation windows are evenly spaced over the validation stream and depend only on (corpus,
tokenizer, seq_len, number of windows): every trial of a study sees the same ones, whatever
its seed. Training windows of step k come from a generator seeded by (seed, k): step k always
reads the same windows, which makes resuming from a checkpoint exact.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tlmsearch.core.base import DataConfig
from tlmsearch.data.corpora import BUILTIN, load_corpus
from tlmsearch.data.tokenizer import BPETokenizer, ByteTokenizer, Tokenizer, token_dtype
from tlmsearch.errors import DataError

FORMAT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class TokenData:
    """A tokenized corpus: flat train/val token arrays (memory-mapped) and what they mean."""

    corpus: str
    tokenizer: str  # "byte", "bpe4096", or "tokens" for pre-tokenized input
    vocab_size: int
    train: np.ndarray  # (N_train,) uint16
    val: np.ndarray  # (N_val,) uint16
    token_bytes: np.ndarray | None  # (vocab_size,) int64 UTF-8 bytes per token; None = unknown
    sha256: str  # checksum of the extracted text (or of the .bin files)
    path: Path | None  # the cache folder (or the tokens folder)

    def meta(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "tokenizer": self.tokenizer,
            "vocab_size": self.vocab_size,
            "train_tokens": int(self.train.shape[0]),
            "val_tokens": int(self.val.shape[0]),
            "sha256": self.sha256,
            "path": str(self.path) if self.path else None,
        }


# ----------------------------------------------------------------------------- preparation


def corpus_slug(corpus: str) -> str:
    """A folder name for a corpus spec (user paths are hashed to stay short and unique)."""
    if corpus in BUILTIN:
        return corpus
    kind, _, rest = corpus.partition(":")
    if kind == "text":
        rest = str(Path(rest).expanduser().resolve())
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", rest)[-40:].strip("-")
    return f"{kind}-{safe}-{hashlib.sha1(rest.encode()).hexdigest()[:8]}"


def prepare(data_cfg: DataConfig, *, verbose: bool = False) -> TokenData:
    """Load (tokenizing and caching on first use) the token streams of `data_cfg`.

    A damaged cache folder is prepared again from the source (one line on stderr says so);
    a cache that cannot be written is one `DataError` naming the folder.
    """
    if data_cfg.corpus.startswith("tokens:"):
        return load_token_files(Path(data_cfg.corpus[len("tokens:") :]).expanduser(), data_cfg.val_fraction)
    text = load_corpus(data_cfg.corpus, data_cfg.val_fraction)
    sha = text.sha256
    tok_key = "byte" if data_cfg.tokenizer == "byte" else f"bpe{data_cfg.bpe_vocab}"
    root = data_cfg.cache_path() / "corpora" / corpus_slug(data_cfg.corpus)
    folder = root / f"{tok_key}-{sha[:12]}"
    _note_checksum(root, data_cfg.corpus, sha)
    cached = _check_cached(folder, data_cfg, sha)
    if isinstance(cached, str):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with _locked(folder / ".lock"):
                cached = _check_cached(folder, data_cfg, sha)  # another process may have prepared it
                if isinstance(cached, str):
                    if cached != _NOT_PREPARED:
                        print(
                            f"warning: {folder}: the prepared corpus is damaged ({cached}); preparing it again",
                            file=sys.stderr,
                            flush=True,
                        )
                    elif verbose:
                        print(f"tokenizing {data_cfg.corpus} with {tok_key} into {folder}", flush=True)
                    _build(folder, data_cfg, text.train, text.val, sha)
                    cached = _check_cached(folder, data_cfg, sha)
        except OSError as exc:
            raise DataError(
                f"cannot write the prepared corpus {data_cfg.corpus} into {folder} ({exc.strerror or exc}); "
                "choose a writable cache folder (--cache-dir or $TLMSEARCH_CACHE)"
                + ("" if isinstance(cached, str) and cached == _NOT_PREPARED else f", or delete {folder}")
            ) from None
        if isinstance(cached, str):  # written but unreadable: not a damage a rebuild mends
            raise DataError(
                f"{folder}: the prepared corpus is still damaged after preparing it again ({cached}); "
                f"delete {folder} or choose another cache folder (--cache-dir or $TLMSEARCH_CACHE)"
            )
    meta, tok = cached
    return TokenData(
        corpus=data_cfg.corpus,
        tokenizer=str(meta["tokenizer"]),
        vocab_size=int(meta["vocab_size"]),
        train=_memmap(folder / "train.bin"),
        val=_memmap(folder / "val.bin"),
        token_bytes=tok.token_bytes(),
        sha256=sha,
        path=folder,
    )


_NOT_PREPARED = "not prepared yet"


def _build(folder: Path, data_cfg: DataConfig, train_text: str, val_text: str, sha: str) -> None:
    """Tokenize into `folder` (under its lock): `meta.json` goes first and comes back last, so
    a preparation killed half-way leaves a folder that is prepared again, never used."""
    (folder / "meta.json").unlink(missing_ok=True)
    for stale in folder.glob("*.tmp"):  # left by a killed preparation; the lock is ours
        stale.unlink(missing_ok=True)
    tok = _make_tokenizer(data_cfg, train_text, folder)
    train, val = tok.encode(train_text), tok.encode(val_text)
    _write_array(folder / "train.bin", train)
    _write_array(folder / "val.bin", val)
    meta = {
        "format": FORMAT_VERSION,
        "corpus": data_cfg.corpus,
        "tokenizer": tok.name,
        "vocab_size": tok.vocab_size,
        "sha256": sha,
        "train_chars": len(train_text),
        "val_chars": len(val_text),
        "train_tokens": int(train.shape[0]),
        "val_tokens": int(val.shape[0]),
    }
    _write_text(folder / "meta.json", json.dumps(meta, indent=2) + "\n")


def _check_cached(folder: Path, data_cfg: DataConfig, sha: str) -> tuple[dict[str, Any], Tokenizer] | str:
    """The metadata and tokenizer of a usable prepared folder, else what is wrong with it
    (`_NOT_PREPARED` when it has no `meta.json`)."""
    meta_path = folder / "meta.json"
    try:
        if not meta_path.is_file():
            return _NOT_PREPARED
        meta = json.loads(meta_path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        return f"meta.json unreadable: {_short(exc)}"
    if not isinstance(meta, dict):
        return "meta.json is not a JSON object"
    if meta.get("format") != FORMAT_VERSION or meta.get("sha256") != sha:
        return "meta.json does not match the source"
    counts: dict[str, Any] = {k: meta.get(k) for k in ("vocab_size", "train_tokens", "val_tokens")}
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in counts.values()):
        return "meta.json lacks vocab_size or token counts"
    vocab = int(counts["vocab_size"])
    if not 1 <= vocab <= 2**16 or not isinstance(meta.get("tokenizer"), str):
        return f"meta.json has vocab_size={vocab} or no tokenizer name"
    try:
        tok = _load_tokenizer(data_cfg, folder)
    except Exception as exc:  # noqa: BLE001 - a damaged tokenizer.json: the tokenizers library raises anything
        return f"tokenizer.json unreadable: {_short(exc)}"
    if tok.vocab_size != vocab:
        return f"the tokenizer has {tok.vocab_size} tokens, meta.json says {vocab}"
    for part in ("train", "val"):
        path = folder / f"{part}.bin"
        want = 2 * int(counts[f"{part}_tokens"])
        try:
            size = path.stat().st_size
        except OSError as exc:
            return f"{path.name}: {exc.strerror or exc}"
        if size != want:
            return f"{path.name} has {size} bytes, meta.json says {want}"
        try:
            largest = int(_memmap(path).max()) if size else 0
        except (OSError, ValueError) as exc:
            return f"{path.name}: {_short(exc)}"
        if largest >= vocab:
            return f"{path.name} holds token id {largest}, beyond the vocabulary of {vocab}"
    return meta, tok


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def load_tokenizer(data_cfg: DataConfig) -> Tokenizer:
    """The tokenizer of a prepared corpus (trains and caches a BPE when needed)."""
    data = prepare(data_cfg)
    assert data.path is not None
    return _load_tokenizer(data_cfg, data.path)


def _make_tokenizer(data_cfg: DataConfig, train_text: str, folder: Path) -> Tokenizer:
    if data_cfg.tokenizer == "byte":
        return ByteTokenizer()
    return BPETokenizer.train(train_text, data_cfg.bpe_vocab, folder / "tokenizer.json")


def _load_tokenizer(data_cfg: DataConfig, folder: Path) -> Tokenizer:
    if data_cfg.tokenizer == "byte":
        return ByteTokenizer()
    return BPETokenizer(folder / "tokenizer.json")


def _note_checksum(root: Path, corpus: str, sha: str) -> None:
    """Remember the last checksum of a corpus and warn when its source text changed."""
    record = root / "checksum.json"
    old = None
    with contextlib.suppress(OSError, ValueError, RecursionError):  # a damaged note: noted again
        found = json.loads(record.read_bytes().decode("utf-8"))
        old = found.get("sha256") if isinstance(found, dict) else None
    if old == sha:
        return
    if isinstance(old, str):
        warnings.warn(
            f"corpus {corpus}: the source text changed since it was last prepared "
            f"(sha256 {old[:12]} -> {sha[:12]}); tokenizing it again",
            stacklevel=3,
        )
    with contextlib.suppress(OSError):  # only a note: an unwritable cache is reported by prepare
        root.mkdir(parents=True, exist_ok=True)
        _write_text(record, json.dumps({"corpus": corpus, "sha256": sha}) + "\n")


# ----------------------------------------------------------------------------- tokens:PATH


def load_token_files(path: Path, val_fraction: float) -> TokenData:
    """nanoGPT-style flat token files: a folder with train.bin and val.bin, or one .bin file.

    An optional `meta.json` beside them may give `vocab_size`, `token_bytes` (a list of UTF-8
    byte counts per token, for bits per byte) and `dtype` ("uint16", or "uint32" for a vocabulary
    over 65,536 tokens; default: uint32 when vocab_size says so, else uint16); without it the
    files are uint16, the vocab is the largest id + 1 and bits per byte are unknown (NaN).
    """
    spec = f"tokens:{path}"
    if path.is_dir():
        train_path, val_path = path / "train.bin", path / "val.bin"
        missing = [p.name for p in (train_path, val_path) if not p.is_file()]
        if missing:
            raise DataError(f"corpus {spec}: the folder has no {' or '.join(missing)}")
        meta_path = path / "meta.json"
    elif path.is_file():
        meta_path = path.with_suffix(".json")
    else:
        raise DataError(f"corpus {spec}: no such file or folder")
    meta: dict[str, Any] = {}
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError) as exc:
            raise DataError(f"{meta_path}: not valid JSON ({exc})") from None
    _check_token_meta(meta, meta_path)
    dtype = np.dtype(meta.get("dtype") or token_dtype(int(meta.get("vocab_size", 1))))
    if path.is_dir():
        train, val = _memmap_checked(path / "train.bin", dtype), _memmap_checked(path / "val.bin", dtype)
    else:
        tokens = _memmap_checked(path, dtype)
        cut = int(tokens.shape[0] * (1 - val_fraction))
        train, val = tokens[:cut], tokens[cut:]
    largest = int(max(train.max(), val.max()))
    vocab = int(meta.get("vocab_size", largest + 1))
    if largest >= vocab:
        raise DataError(f"corpus {spec}: token id {largest} is out of range for vocab_size={vocab} in {meta_path}")
    token_bytes = None
    if "token_bytes" in meta:
        token_bytes = np.asarray(meta["token_bytes"], dtype=np.int64)
        if token_bytes.shape != (vocab,):
            raise DataError(f"{meta_path}: token_bytes needs {vocab} entries, has {token_bytes.shape[0]}")
    stat = [(p.name, p.stat().st_size, int(p.stat().st_mtime)) for p in sorted(Path(path).glob("*.bin"))]
    sha = hashlib.sha256(repr(stat if path.is_dir() else (path.stat().st_size,)).encode()).hexdigest()
    return TokenData(spec, "tokens", vocab, train, val, token_bytes, sha, path)


TOKEN_DTYPES = ("uint16", "uint32")


def _check_token_meta(meta: Any, meta_path: Path) -> None:
    """The metadata beside token files is user data: a wrong type is one line naming the file."""
    if not isinstance(meta, dict):
        raise DataError(
            f"{meta_path}: expected a JSON object with vocab_size and token_bytes, found {type(meta).__name__}"
        )
    dtype = meta.get("dtype")
    if dtype is not None and dtype not in TOKEN_DTYPES:
        raise DataError(f"{meta_path}: dtype={dtype!r} is not a token file type; allowed: {', '.join(TOKEN_DTYPES)}")
    high = 2**32 if dtype == "uint32" or (dtype is None and _wide(meta.get("vocab_size"))) else 2**16
    vocab = meta.get("vocab_size", 1)
    if isinstance(vocab, bool) or not isinstance(vocab, int) or not 1 <= vocab <= high:
        bits = "uint32" if high > 2**16 else "uint16"
        raise DataError(f"{meta_path}: vocab_size={vocab!r} must be an integer in [1, {high}] ({bits} token ids)")
    tb = meta.get("token_bytes", [])
    if not isinstance(tb, list) or any(isinstance(b, bool) or not isinstance(b, int) or b < 0 for b in tb):
        raise DataError(f"{meta_path}: token_bytes must be a list of non-negative integers (UTF-8 bytes per token)")


def _wide(vocab: Any) -> bool:
    return isinstance(vocab, int) and not isinstance(vocab, bool) and 2**16 < vocab <= 2**32


def _memmap_checked(path: Path, dtype: np.dtype[Any] | None = None) -> np.ndarray:
    dtype = np.dtype(np.uint16) if dtype is None else dtype
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror}") from None
    if size == 0 or size % dtype.itemsize:
        raise DataError(
            f"{path}: malformed token file ({size} bytes); expected a non-empty flat array of {dtype.name} tokens"
        )
    try:
        return _memmap(path, dtype)
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None


def check_windows(data: TokenData, seq_len: int) -> None:
    """Refuse, before anything trains, a corpus whose training or validation part is shorter
    than one window (`seq_len + 1` tokens): one line with the corpus size, the split and the
    minimum. Trials would otherwise each fail with the same error."""
    n_train, n_val = int(data.train.shape[0]), int(data.val.shape[0])
    need = int(seq_len) + 1
    short = [name for name, n in (("training", n_train), ("validation", n_val)) if n < need]
    if short:
        raise DataError(
            f"corpus {data.corpus} is too small for seq_len={seq_len}: its {n_train + n_val:,} tokens "
            f"({data.tokenizer}) split into {n_train:,} training and {n_val:,} validation tokens, and each "
            f"part needs at least seq_len + 1 = {need:,} (the {' and '.join(short)} "
            f"part{'s fall' if len(short) > 1 else ' falls'} short); use a larger corpus or a shorter seq_len"
        )


# ----------------------------------------------------------------------------- windows and batches


def val_windows(n_val_tokens: int, seq_len: int, n_windows: int) -> np.ndarray:
    """(n_windows,) int64 start offsets, evenly spaced over the validation stream."""
    last = n_val_tokens - seq_len - 1
    if last < 0:
        raise DataError(
            f"the validation part has {n_val_tokens} tokens, fewer than seq_len + 1 = {seq_len + 1}; "
            "use a larger corpus or a shorter seq_len"
        )
    return np.linspace(0, last, n_windows).round().astype(np.int64)


def tile_windows(n_val_tokens: int, seq_len: int) -> np.ndarray:
    """Start offsets of every non-overlapping window of the validation stream: each token is
    predicted once (the whole split; as many windows as fit, the tail shorter than one dropped)."""
    count = (n_val_tokens - 1) // seq_len
    if count < 1:
        raise DataError(
            f"the validation part has {n_val_tokens} tokens, fewer than seq_len + 1 = {seq_len + 1}; "
            "use a larger corpus or a shorter seq_len"
        )
    return np.arange(count, dtype=np.int64) * seq_len


def train_starts(n_train_tokens: int, seq_len: int, shape: tuple[int, ...], seed: int, step: int = 0) -> np.ndarray:
    """Start offsets (shape `shape`) of the training windows of optimizer step `step`.

    Each step has its own generator seeded by (seed, step): step k reads the same windows
    whatever happened before it, so resuming is exact and nothing is held for the whole run.
    """
    high = n_train_tokens - seq_len  # a window reads seq_len + 1 tokens
    if high <= 0:
        raise DataError(f"the training part has {n_train_tokens} tokens, fewer than seq_len + 1 = {seq_len + 1}")
    rng = np.random.default_rng([seed, 0x5EED, step])
    return rng.integers(0, high, size=shape, dtype=np.int64)


def gather(tokens: np.ndarray, starts: np.ndarray, seq_len: int) -> np.ndarray:
    """(B, seq_len + 1) int64 windows of `tokens` beginning at `starts` (B,)."""
    idx = starts[:, None] + np.arange(seq_len + 1, dtype=np.int64)  # (B, T+1)
    return np.asarray(tokens[idx], dtype=np.int64)


def iter_val_batches(data: TokenData, seq_len: int, n_windows: int, batch_size: int) -> Iterator[np.ndarray]:
    """The fixed validation windows in batches of (b, seq_len + 1) int64."""
    starts = val_windows(data.val.shape[0], seq_len, n_windows)
    for i in range(0, len(starts), batch_size):
        yield gather(data.val, starts[i : i + batch_size], seq_len)


# ----------------------------------------------------------------------------- file helpers


def _memmap(path: Path, dtype: np.dtype[Any] | None = None) -> np.ndarray:
    dtype = np.dtype(np.uint16) if dtype is None else dtype
    if path.stat().st_size == 0:  # an empty part: mmap refuses empty files
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r")


def _write_array(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    array.astype(np.uint16).tofile(tmp)
    tmp.replace(path)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, writes stay atomic
        yield
        return
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
