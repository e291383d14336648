"""The registry of architecture families: one plain dict, torch-free.

    ARCHITECTURES = {name: "package.module:SPEC"}      # where each family's ArchSpec lives

Config validation (`ModelConfig`), the CLI's help, the docs, the counts and `build_model` all
read this dict. Its values are import paths, resolved (and cached) on first use, for two
reasons: the registry stays importable without importing any architecture module (config
validation reads it, and the architectures' own modules refer back to the config), and an
architecture outside the package is named the same way. `ModelConfig(arch="my_pkg.my_arch:SPEC")`
uses the `ArchSpec` found at that path without any registration, so every process that reads
the config, Ray's trial workers included, finds the architecture by importing its module.
Adding a family to the package is one line here (see `tlmsearch/models/README.md`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from typing import Any, overload

from tlmsearch.errors import ConfigError
from tlmsearch.models.spec import ArchSpec

ARCHITECTURES: dict[str, str] = {
    "transformer": "tlmsearch.models.transformer_spec:SPEC",
    "gated_attention": "tlmsearch.models.gated_attention_spec:SPEC",
    "titans": "tlmsearch.models.titans_spec:SPEC",
    "hope_attention": "tlmsearch.models.hope_attention_spec:SPEC",
}

_RESOLVED: dict[str, ArchSpec[Any]] = {}


def import_object(path: str) -> Any:
    """The object at `"package.module:NAME"` (a ConfigError naming the path when it is absent)."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{path!r} is not an import path; write it as package.module:NAME")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name!r} (from {path!r}): {exc}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"module {module_name!r} has no {attr!r} (from {path!r})") from None


def architecture(name: str) -> ArchSpec[Any]:
    """The `ArchSpec` of `name`: a key of `ARCHITECTURES`, or the import path of an `ArchSpec`."""
    path = ARCHITECTURES.get(name, name if ":" in name else None)
    if path is None:
        raise ConfigError(
            f"arch={name!r} is not allowed; choose one of: {', '.join(ARCHITECTURES)} "
            "(or the import path package.module:SPEC of an ArchSpec)"
        )
    spec = _RESOLVED.get(path)
    if spec is None:
        found = import_object(path)
        if not isinstance(found, ArchSpec):
            raise ConfigError(f"arch={name!r}: {path} is a {type(found).__name__}, not an ArchSpec")
        spec = _RESOLVED[path] = found
    return spec


def summaries() -> dict[str, str]:
    """Registered name -> one-line summary (for CLI help and docs)."""
    return {name: architecture(name).summary for name in ARCHITECTURES}


class ArchitectureNames(Sequence[str]):
    """The registered names, read live from `ARCHITECTURES`; `in` also accepts the import path
    of an `ArchSpec` outside the package, so checks like `arch in ARCHITECTURE_NAMES` (and
    `check_choice`) accept every architecture that `architecture()` accepts."""

    def _names(self) -> tuple[str, ...]:
        return tuple(ARCHITECTURES)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(ARCHITECTURES)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name in ARCHITECTURES:
            return True
        try:
            architecture(name)
        except ConfigError:
            return False
        return True

    def __repr__(self) -> str:
        return repr(self._names())


ARCHITECTURE_NAMES: Sequence[str] = ArchitectureNames()
