"""The small public API: every name in `tlmsearch.__all__` resolves lazily."""

from __future__ import annotations

import tlmsearch


def test_every_public_name_resolves() -> None:
    for name in tlmsearch.__all__:
        assert getattr(tlmsearch, name) is not None, name


def test_public_functions_are_functions_not_modules() -> None:
    for name in ("train", "search", "load", "profile", "verify", "compare", "build_model", "preset"):
        assert callable(getattr(tlmsearch, name)), name
