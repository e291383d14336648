"""`ArchSpec`: what an architecture tells the rest of the package about itself (no torch).

Every architecture has two files: `<name>.py`, its `nn.Module` (imports torch), and a torch-free
companion `<name>_spec.py` that defines `SPEC = ArchSpec(...)` with

- `model`: the import path `"module:Class"` of the `nn.Module` (built as `Class(cfg)`), so the
  spec can be read without importing torch;
- `block_params(cfg, layer)`: exact parameters of block `layer` *other than* its tapered
  MLP's `3 * d * mlp_widths[layer]` (norms included);
- `block_flops(cfg, layer)`: exact forward FLOPs of block `layer` over one sequence of
  `seq_len` tokens, *other than* the tapered MLP's read `2 * seq_len * 3 * d * mlp_widths[layer]`;
- `validate(cfg)`: the architecture's own checks of a `ModelConfig` (raise `ConfigError`);
- `summary`: one line for CLI help and the docs.

`tlmsearch.models.counts` adds the shared parts (embedding, final norm, LM head, the MLPs) and
turns forward FLOPs into training FLOPs per token. FLOPs here are those of matrix products and
convolutions, two per multiply-add (the convention of `torch.utils.flop_counter` and of MFU);
elementwise work (norms, activations, softmax, gates) is not counted. Use the helpers below to
write the terms, so that they say what runs rather than an approximation.

This module imports nothing from the package: config validation reads the registry, and the
registry reads this module, so a static import of the config here would close a cycle. The
hooks are typed over the config type `C` instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Generic, TypeVar

C = TypeVar("C")


def _no_checks(cfg: Any) -> None:
    """The default `validate`: the shared checks of `ModelConfig` are all this family needs."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ArchSpec(Generic[C]):
    """One architecture family: where its module is, its exact parameter and FLOP terms."""

    model: str  # "package.module:Class", the nn.Module built as Class(cfg)
    summary: str  # one line: what the family is (CLI help, docs)
    block_params: Callable[[C, int], int]  # block `layer` minus its tapered MLP's 3 * d * f_l
    block_flops: Callable[[C, int], float]  # forward FLOPs of block `layer` per sequence, minus the MLP read
    validate: Callable[[C], None] = _no_checks  # architecture-specific checks; raise ConfigError


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
