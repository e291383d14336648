"""Small pieces of the sentences tlmsearch prints (pure)."""

from __future__ import annotations


def plural(n: int, word: str) -> str:
    """'1 run', '2 runs', '0 runs': a count and its noun (a regular plural)."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


__all__ = ["plural"]
