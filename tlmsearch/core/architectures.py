"""The architecture families' registry and what each family tells the package about itself.

No torch, and no import of any architecture module: config validation reads this module, and
the architectures' own modules (`tlmsearch/models/<name>_spec.py`) refer back to the config.

    ARCHITECTURES = {name: "package.module:SPEC"}      # where each family's ArchSpec lives

Config validation (`ModelConfig`: the name, then the family's `validate` hook), the CLI's help
(`ARCHITECTURE_NAMES`, `summaries()`), the docs, the counts and `build_model` all read this
dict. Its values are import paths, resolved (and cached) on first use, so that an architecture
outside the package is named the same way: `ModelConfig(arch="my_pkg.my_arch:SPEC")` uses the
`ArchSpec` found at that path without any registration, and every process that reads the
config, Ray's trial workers included, finds the architecture by importing its module. Adding a
family to the package is one line here (checklist: `tlmsearch/models/README.md`).

Every architecture has two files: `<name>.py`, its `nn.Module` (imports torch), and a torch-free
companion `<name>_spec.py` that defines `SPEC = ArchSpec(...)` with

- `model`: the import path `"module:Class"` of the `nn.Module` (built as `Class(cfg)`);
- `block_params(cfg, layer)`: exact parameters of block `layer` *other than* its tapered
  MLP's `3 * d * mlp_widths[layer]` (norms included);
- `block_flops(cfg, layer)`: exact forward FLOPs of block `layer` over one sequence of
  `seq_len` tokens, *other than* the tapered MLP's read `2 * seq_len * 3 * d * mlp_widths[layer]`;
- `validate(cfg)`: the architecture's own checks of a `ModelConfig` (raise `ConfigError`);
- `frozen_flops(cfg, layer)`: the part of `block_flops` spent in products with a constant
  factor (no gradient), whose backward costs one product instead of two (default: none);
- `summary`: one line for CLI help and the docs;
- `options`: the family's options class, a subclass of `core.base.ArchOptions` defined in its
  spec module, checking its own fields (default: none; `ModelConfig.options` holds an instance);
- `block_widths`: whether the family builds per-layer block (residual-stream) widths
  (`ModelConfig.block_widths`); a family that does reads each layer's width from
  `cfg.block_width(layer)` in its module and in its counts (default: no, and the config refuses them).

`tlmsearch.models.counts` adds the shared parts (embedding, final norm, LM head, the MLPs) and
turns forward FLOPs into training FLOPs per token. FLOPs here are those of matrix products and
convolutions, two per multiply-add (the convention of `torch.utils.flop_counter` and of MFU);
elementwise work (norms, activations, softmax, gates) is not counted. The helpers below write
the terms, so that they say what runs rather than an approximation. `ArchSpec` is generic over
the config type so that this module needs no import of the config.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

from tlmsearch.errors import ConfigError

C = TypeVar("C")


def _no_checks(cfg: Any) -> None:
    """The default `validate`: the shared checks of `ModelConfig` are all this family needs."""


def _no_frozen(cfg: Any, layer: int) -> float:
    """The default `frozen_flops`: every product has two factors that need a gradient."""
    return 0.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class ArchSpec(Generic[C]):
    """One architecture family: where its module is, its exact parameter and FLOP terms."""

    model: str  # "package.module:Class", the nn.Module built as Class(cfg)
    summary: str  # one line: what the family is (CLI help, docs)
    block_params: Callable[[C, int], int]  # block `layer` minus its tapered MLP's 3 * d * f_l
    block_flops: Callable[[C, int], float]  # forward FLOPs of block `layer` per sequence, minus the MLP read
    validate: Callable[[C], None] = _no_checks  # architecture-specific checks; raise ConfigError
    # forward FLOPs of block `layer` (part of block_flops) in products with a constant factor
    # (a fixed matrix, no gradient): their backward is one product of the same size, not two
    frozen_flops: Callable[[C, int], float] = _no_frozen
    block_widths: bool = False  # builds per-layer residual widths (ModelConfig.block_widths)
    # the family's options class (a core.base.ArchOptions subclass, beside SPEC); None = no options
    options: type[Any] | None = None


# ----------------------------------------------------------------------------- FLOP helpers


def linear_flops(tokens: int, fan_in: int, fan_out: int) -> int:
    """Forward FLOPs of a (bias-free or biased) linear map applied to `tokens` rows."""
    return 2 * tokens * fan_in * fan_out


def attention_flops(queries: int, keys: int, d: int) -> int:
    """Forward FLOPs of softmax attention scoring `queries` x `keys` pairs over total head
    width `d`: q k^T and the weighted sum of values, 2 * d each per pair."""
    return 4 * queries * keys * d


def chunks(tokens: int, chunk: int) -> int:
    """Number of chunks of `chunk` tokens covering `tokens` (the last one zero-padded)."""
    return -(-tokens // chunk)


# ----------------------------------------------------------------------------- the registry

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
