"""The session's cache folders (tests/conftest.py's `session_cache` fixture)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class SessionCache(NamedTuple):
    user: Path  # where the cache would have been without the suite: the user's
    session: Path  # where $TLMSEARCH_CACHE points during the suite
