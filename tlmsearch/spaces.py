"""Search spaces: Optuna define-by-run functions that turn a trial into a `ProfileSpec`.

A space is a Python module (built in under `search_spaces/`, or a user's `.py` file) with

    NAME: str                                  # defaults to the file name
    DESCRIPTION: str                           # defaults to the module docstring
    def sample(trial, n_layers: int) -> ProfileSpec     # asks the trial, computes nothing else
    def dimension(n_layers: int) -> int        # number of parameters sampled (optional)
    def encode(spec: ProfileSpec, n_layers: int) -> dict | None   # optional, see below

`encode` returns the parameters that make `sample` reproduce `spec` exactly (so a search can
seed known baselines such as cosine 1.5 -> 0.5 into the sampler), or None when the space cannot
express it. Only this module and the search engine know about spaces; Optuna is never
imported here.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec


@dataclass(frozen=True)
class SearchSpace:
    name: str
    description: str
    sample: Callable[[Any, int], ProfileSpec]
    _dimension: Callable[[int], int] | None = None
    _encode: Callable[[ProfileSpec, int], dict[str, Any] | None] | None = None
    source: str = ""

    def dimension(self, n_layers: int) -> int:
        return self._dimension(n_layers) if self._dimension else -1

    def encode(self, spec: ProfileSpec, n_layers: int) -> dict[str, Any] | None:
        return self._encode(spec, n_layers) if self._encode else None


def builtin_spaces() -> list[str]:
    import search_spaces

    return sorted(m.name for m in pkgutil.iter_modules(search_spaces.__path__) if not m.name.startswith("_"))


def load_space(name_or_path: str) -> SearchSpace:
    """A built-in space by name (see `builtin_spaces()`) or a user's space from a `.py` path."""
    if name_or_path.endswith(".py") or "/" in name_or_path:
        path = Path(name_or_path)
        if not path.is_file():
            raise ConfigError(f"search space file {path} does not exist")
        spec = importlib.util.spec_from_file_location(f"tlmsearch_user_space_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"cannot load search space file {path}")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # a user's file: report, don't crash
            raise ConfigError(f"search space file {path} failed to import: {type(exc).__name__}: {exc}") from None
        except SystemExit as exc:  # sys.exit() in a user's file would end the whole search with its status
            raise ConfigError(f"search space file {path} calls sys.exit({exc.code!r}) on import; remove it") from None
        return _from_module(module, default_name=path.stem, source=str(path.resolve()))
    names = builtin_spaces()
    if name_or_path not in names:
        raise ConfigError(
            f"unknown search space {name_or_path!r}; choose one of: {', '.join(names)} or give a path to a .py file"
        )
    module = importlib.import_module(f"search_spaces.{name_or_path}")
    return _from_module(module, default_name=name_or_path, source=name_or_path)


def _from_module(module: ModuleType, *, default_name: str, source: str) -> SearchSpace:
    sample = getattr(module, "sample", None)
    if not callable(sample):
        raise ConfigError(f"search space {source} defines no function sample(trial, n_layers) -> ProfileSpec")
    return SearchSpace(
        name=getattr(module, "NAME", default_name),
        description=getattr(module, "DESCRIPTION", (module.__doc__ or "").strip().split("\n")[0]),
        sample=sample,
        _dimension=getattr(module, "dimension", None),
        _encode=getattr(module, "encode", None),
        source=source,
    )
