"""`build_model` and `mlp_hidden_sizes` (import torch; re-exported lazily by the package)."""

from __future__ import annotations

import torch
from torch import nn

from tlmsearch.core.architectures import architecture, import_object
from tlmsearch.core.base import INIT_MODES, ModelConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models.keyed_init import keyed_reinit
from tlmsearch.models.parametrization import apply_parametrization, check_parametrization


def model_class(arch: str) -> type[nn.Module]:
    """The `nn.Module` class of architecture `arch` (imports its module)."""
    cls = import_object(architecture(arch).model)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise TypeError(f"{architecture(arch).model} is not an nn.Module class")
    return cls


def build_model(
    cfg: ModelConfig,
    *,
    seed: int | None = None,
    init: str = "keyed",
    parametrization: str = "standard",
    base_width: float | None = None,
) -> nn.Module:
    """Build the model `cfg` describes (on CPU, float32), initialised from `seed` without
    disturbing the global RNG state; with `seed=None`, from the global RNG (the old stream).

    `init` says how `seed` becomes weights (the distributions are the same either way):
    - "keyed" (default): common random numbers. Every tensor is drawn from generators keyed
      by (seed, its name, the position), so at one seed the profiles of a budget share every
      tensor of equal shape and the MLP matrices agree on their common hidden units; paired
      comparisons between profiles then carry much less initialisation noise
      (`tlmsearch.models.keyed_init`).
    - "stream": one stream seeded by `seed` and consumed in module order (the behaviour before
      keyed init; profiles of different widths share only the tensors drawn before the first
      MLP).

    `parametrization` "width" then scales each layer's MLP down-projection by its width and
    records its Adam lr multiplier on the model (`tlmsearch.models.parametrization`; `base_width`
    defaults to the mean of `cfg.mlp_widths`); "standard" (default) changes nothing.
    """
    if init not in INIT_MODES:
        raise ConfigError(f"init={init!r} is not an init mode; allowed: {', '.join(INIT_MODES)}")
    check_parametrization(parametrization)
    cls = model_class(cfg.arch)
    if seed is None:
        model = cls(cfg)
    else:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = cls(cfg)
        if init == "keyed":
            keyed_reinit(model, seed)
    apply_parametrization(model, parametrization, base_width)
    return model


def mlp_hidden_sizes(model: nn.Module) -> tuple[int, ...]:
    """Each block's tapered MLP hidden units, read off the built modules (Hope-attention:
    the sum over its CMS levels)."""
    sizes = []
    for block in model.blocks:  # type: ignore[union-attr]
        mlps = [level.mlp for level in block.levels] if hasattr(block, "levels") else [block.mlp]
        sizes.append(sum(mlp.w_gate.out_features for mlp in mlps))
    return tuple(sizes)


def weight_decay_split(model: nn.Module) -> tuple[list[str], list[str]]:
    """Names of the parameters AdamW decays, and of those it leaves alone.

    The rule (spec, "Amendments after review"): weight decay pulls the matrices of the model
    proper towards zero, and nothing else. Decayed: the weights of `nn.Linear` and
    `nn.Embedding` modules (the embedding is the tied LM head). Not decayed: norms' scales,
    biases (Titans' gate biases set the initial θ, η, α), convolution taps (Titans' causal
    convs start as the identity), raw parameters such as Titans' memory initial weights and
    persistent tokens and Hope's step sizes, whose zero is no neutral value, and any parameter a
    module names in a `no_weight_decay()` method (names local to that module). A tied tensor
    is listed once. Hope-attention's fast CMS levels keep their SwiGLU matrices decayed: they
    are the tapered MLP's matrices, decayed in every family alike, so profiles compare fairly.
    """
    decay: list[str] = []
    keep: list[str] = []
    seen: set[int] = set()
    for module_name, module in model.named_modules():
        opt_out = getattr(module, "no_weight_decay", None)
        excluded = set(opt_out()) if callable(opt_out) else set()
        matrix_module = isinstance(module, nn.Linear | nn.Embedding)
        for name, p in module.named_parameters(recurse=False):
            if id(p) in seen or not p.requires_grad:
                continue
            seen.add(id(p))
            full = f"{module_name}.{name}" if module_name else name
            (decay if matrix_module and name == "weight" and name not in excluded else keep).append(full)
    return decay, keep
