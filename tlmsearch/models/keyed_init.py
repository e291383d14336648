"""Common random numbers for the initialisation: every parameter's random values are read from
generators keyed by (seed, parameter name, position), not from one stream consumed in module
order.

Why: comparisons between width profiles are paired by seed. With one stream, the first tensor
whose shape differs between two profiles (an MLP matrix) shifts every later draw, so at one
seed cosine and uniform share only the few tensors drawn before it, and the paired difference
of their losses carries the whole initialisation noise. With keyed draws, every tensor whose
shape is the same in both profiles gets the same values, and the MLP matrices of different
widths agree on their common hidden units: profiles differ at initialisation only in the units
one has and the other lacks.

How: the architectures keep their single init code (`LanguageModel._init_weights` and the
`reset_extra_parameters()` hooks); `keyed_reinit` runs it again under a `TorchFunctionMode`
that replaces each normal draw on a parameter by `mean + std * Z`, where Z comes from a
shape-free field of standard normals: element (..., i, j) of the tensor named `name` is
element (i mod T, j mod T) of a T x T block drawn from a generator seeded by a stable hash of
(seed, name, leading indices, i // T, j // T). Its value depends on the name and the position,
never on the shape, so w_gate (f, d) row u and w_down (d, f) column u hold the same numbers
whatever f is. The distribution is exactly the old one (independent N(mean, std^2) per
element, same std and mean per tensor); deterministic steps (constants, identity conv taps,
gate biases) run unchanged. Any other random draw during the replay (uniform, orthogonal,
a draw on a slice of a parameter, a random factory) is refused with `KeyedInitError`, so an
architecture whose init the field does not cover fails loudly instead of silently falling back
to the stream.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from tlmsearch.models.common import LanguageModel  # the chassis owns the init code

TILE = 64  # side of the keyed blocks; changing it changes every keyed initialisation

# draws the field reproduces: normal draws (they all reduce to Tensor.normal_ or nn.init.normal_)
_NORMAL: set[Callable[..., Any]] = {nn.init.normal_, torch.Tensor.normal_}
# random draws it refuses during the replay (everything else passes through untouched)
_REFUSED: set[Callable[..., Any]] = {
    torch.Tensor.uniform_,
    torch.Tensor.random_,
    torch.Tensor.bernoulli_,
    torch.Tensor.exponential_,
    torch.Tensor.cauchy_,
    torch.Tensor.log_normal_,
    torch.Tensor.geometric_,
    torch.rand,
    torch.randn,
    torch.randint,
    torch.randperm,
    torch.normal,
    torch.bernoulli,
    torch.multinomial,
    torch.rand_like,
    torch.randn_like,
    torch.randint_like,
    nn.init.uniform_,
    nn.init.trunc_normal_,
    nn.init.kaiming_uniform_,
    nn.init.kaiming_normal_,
    nn.init.xavier_uniform_,
    nn.init.xavier_normal_,
    nn.init.orthogonal_,
    nn.init.sparse_,
}


class KeyedInitError(RuntimeError):
    """An architecture's init draws something the keyed field does not reproduce."""


def stable_seed(*parts: object) -> int:
    """A 63-bit generator seed from `parts`, the same in every process and Python version
    (unlike the salted built-in `hash`)."""
    text = "\x1f".join(str(p) for p in parts)
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def keyed_normal(seed: int, name: str, shape: tuple[int, ...]) -> torch.Tensor:
    """Standard normals of `shape` (float32) whose element at each index depends only on
    (seed, name, index): two shapes of one name agree on their common leading corner.

    The last two dimensions are tiled by T x T blocks (a 0-d or 1-d tensor is a 1 x n matrix);
    each leading index (e.g. a memory head) has its own blocks.
    """
    lead, (rows, cols) = shape[:-2], ((1, 1) + shape)[-2:]
    out = torch.empty(*lead, rows, cols)
    g = torch.Generator()
    for prefix in itertools.product(*(range(n) for n in lead)):
        for bi, bj in itertools.product(range(math.ceil(rows / TILE)), range(math.ceil(cols / TILE))):
            g.manual_seed(stable_seed(seed, name, *prefix, bi, bj))
            block = torch.randn(TILE, TILE, generator=g)  # (T, T), always the full block
            r, c = min(TILE, rows - bi * TILE), min(TILE, cols - bj * TILE)
            out[prefix][bi * TILE : bi * TILE + r, bj * TILE : bj * TILE + c] = block[:r, :c]
    return out.reshape(shape)


class _KeyedDraws(TorchFunctionMode):
    """Within this mode, normal draws on whole named tensors read the keyed field; other
    random draws raise. Records the names it drew."""

    def __init__(self, seed: int, names: dict[int, str]) -> None:
        super().__init__()
        self.seed, self.names = seed, names
        self.drawn: set[str] = set()

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if func in _NORMAL:
            tensor = args[0] if args else kwargs["tensor"]
            mean = args[1] if len(args) > 1 else kwargs.get("mean", 0.0)
            std = args[2] if len(args) > 2 else kwargs.get("std", 1.0)
            name = self.names.get(id(tensor))
            if name is None:
                raise KeyedInitError(
                    f"keyed init: a normal draw on a tensor of shape {tuple(tensor.shape)} that is not a whole "
                    "parameter or buffer of the model (a slice or a temporary); draw whole parameters, "
                    "or build with init='stream'"
                )
            field = keyed_normal(self.seed, name, tuple(tensor.shape))
            with torch.no_grad():
                tensor.copy_(field.mul_(std).add_(mean))
            self.drawn.add(name)
            return tensor
        if func in _REFUSED:
            raise KeyedInitError(
                f"keyed init reproduces normal draws only, and the init calls {getattr(func, '__name__', func)}; "
                "express it as a normal draw (nn.init.normal_) on a whole parameter, or build with init='stream'"
            )
        return func(*args, **kwargs)


def keyed_reinit(model: nn.Module, seed: int) -> set[str]:
    """Re-run `model`'s initialisation with every normal draw read from the keyed field of
    `seed` (see the module docstring); returns the names of the tensors drawn.

    `model` must be a `LanguageModel` (its init is `_init_weights` on every module, then the
    `reset_extra_parameters()` hooks); the global RNG is neither read nor advanced.
    """
    if not isinstance(model, LanguageModel):
        raise TypeError(
            f"keyed init needs a LanguageModel (its init code is replayed); {type(model).__name__} is not one: "
            "build it with init='stream'"
        )
    names = {id(t): n for n, t in itertools.chain(model.named_parameters(), model.named_buffers())}
    with _KeyedDraws(seed, names) as mode:
        model.apply(model._init_weights)  # the chassis' own init, unchanged
        model.reset_extra_parameters()
    return mode.drawn
