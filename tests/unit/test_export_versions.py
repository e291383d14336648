"""docs/cli.md names, per export format, the library and version that reads it in the tests; CI
installs the dev extra (pyproject.toml), which pins those versions, so the table says what CI
loaded. This test holds the three together: every `library X.Y.Z` the table names is the dev
extra's (or the megatron extra's) pin and, where the library is installed, the installed one."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARIES = ("transformers", "safetensors", "accelerate", "megatron-core")


def _table() -> str:
    text = (ROOT / "docs" / "cli.md").read_text()
    start = text.index("| format | read in the tests by | checked |")
    return text[start : text.index("\n\n", start)]


def _pins() -> dict[str, str]:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = {}
    for spec in extras["dev"] + extras["megatron"]:
        name, sep, version = spec.partition("==")
        if sep:
            pins[name.strip()] = version.strip()
    return pins


def test_the_docs_name_the_pinned_version_of_every_reader() -> None:
    table, pins = _table(), _pins()
    for library in LIBRARIES:
        named = set(re.findall(rf"\b{re.escape(library)} (\d+\.\d+\.\d+)", table))
        assert named == {pins[library]}, (library, named, pins.get(library))


@pytest.mark.parametrize("library", LIBRARIES)
def test_the_installed_reader_is_the_pinned_one(library: str) -> None:
    try:
        installed = metadata.version(library)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{library} is not installed (pip install -e '.[dev]')")
    assert installed == _pins()[library]
