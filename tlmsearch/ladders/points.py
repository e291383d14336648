"""The points of a ladder and the target it extrapolates to: shapes, lengths and training FLOPs.

A point is written `SHAPE@TOKENS_PER_PARAM`: SHAPE is a preset name (`tlmsearch.configs.presets`),
optionally with shape overrides after a colon (`tiny:d_model=48,n_layers=3,base_width=96`), and
TOKENS_PER_PARAM the training length in tokens per non-embedding parameter, e.g. `cpu-xs@20`.
A point's training compute is the exact training FLOPs of one run (`models.counts`: every
profile of a budget has the same FLOPs per token) times the tokens its resolved steps train.

A target is a preset name (its shape, at this architecture: exact counts) or a parameter count
(`440m`, `1.3b`, `2.5e8`: non-embedding parameters; without a shape its FLOPs are counted as
6 N per token, the Kaplan approximation, which leaves out attention scores and the LM head).
Pure: presets, profiles and counts, no torch.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from tlmsearch.configs.presets import PRESETS, check_search_model
from tlmsearch.configs.resolve import budget_for, trial_shape
from tlmsearch.core.base import with_tokens_per_param
from tlmsearch.errors import ConfigError
from tlmsearch.models.counts import count_params, flops_per_token
from tlmsearch.profiles import ProfileSpec

_COUNT = re.compile(r"^\s*(\d+(?:\.\d*)?(?:e\d+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)
_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
_NAME = re.compile(r"[^a-z0-9._-]+")
POINT_FORM = "SHAPE@TOKENS_PER_PARAM, SHAPE a preset with optional overrides, e.g. cpu-xs@20 or tiny:n_layers=3@5"
# model fields a point may not set, and why: what the point would train is decided elsewhere
NOT_POINT_OVERRIDES: dict[str, str] = {
    "vocab_size": "vocab_size is not a point's: the vocabulary is the tokenizer's (--tokenizer byte: 256, or "
    "bpe:VOCAB), the same at every point; remove it",
}


@dataclass(frozen=True)
class PointSpec:
    """One point as the user wrote it, parsed."""

    text: str  # canonical text
    preset: str
    model: dict[str, Any]  # shape / ModelConfig overrides
    tokens_per_param: float

    @property
    def name(self) -> str:
        """The point's folder name: the canonical text made safe ("cpu-xs-t20", "tiny-n_layers3-t5")."""
        shape = self.preset + "".join(f"-{k}{v}" for k, v in self.model.items())
        return _NAME.sub("_", f"{shape}-t{self.tokens_per_param:g}".lower())


def parse_point(text: str) -> PointSpec:
    """`SHAPE@TOKENS_PER_PARAM` -> PointSpec; a `ConfigError` naming the form otherwise."""
    if not isinstance(text, str) or text.count("@") != 1:
        raise ConfigError(f"point {text!r}: write it as {POINT_FORM}")
    shape, length = (part.strip() for part in text.split("@"))
    try:
        tpp = float(length)
    except ValueError:
        raise ConfigError(f"point {text!r}: {length!r} is no number of tokens per parameter ({POINT_FORM})") from None
    if not (math.isfinite(tpp) and tpp > 0):
        raise ConfigError(f"point {text!r}: tokens per parameter must be positive and finite")
    preset_name, _, rest = shape.partition(":")
    preset_name = preset_name.strip()
    if preset_name not in PRESETS:
        raise ConfigError(f"point {text!r}: preset {preset_name!r} is unknown; choose one of: {', '.join(PRESETS)}")
    model: dict[str, Any] = {}
    for item in filter(None, (i.strip() for i in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise ConfigError(f"point {text!r}: override {item!r} is not KEY=VALUE ({POINT_FORM})")
        if key.strip() in model:
            raise ConfigError(f"point {text!r}: {key.strip()} is given twice; give each override once")
        if key.strip() in NOT_POINT_OVERRIDES:
            raise ConfigError(f"point {text!r}: {NOT_POINT_OVERRIDES[key.strip()]}")
        try:
            model[key.strip()] = int(value)
        except ValueError:
            raise ConfigError(f"point {text!r}: override {item!r} needs a whole number") from None
    try:
        model = check_search_model(model, None)  # whole numbers only: no options
    except ConfigError as exc:
        raise ConfigError(f"point {text!r}: {exc}") from None
    canon = preset_name + (":" + ",".join(f"{k}={v}" for k, v in model.items()) if model else "") + f"@{tpp:g}"
    return PointSpec(text=canon, preset=preset_name, model=model, tokens_per_param=tpp)


@dataclass(frozen=True)
class PointSize:
    """What one run of a point trains: its parameters, tokens, steps and FLOPs."""

    non_embedding: int
    params_total: int
    steps: int
    tokens: int
    flops_per_token: float
    n_layers: int = 0  # the shape (0: not known)
    d_model: int = 0
    n_heads: int = 0

    @property
    def compute(self) -> float:
        return self.flops_per_token * self.tokens

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads if self.n_heads else 0

    def shape_text(self) -> str:
        """'2 layers, head size 16' (what a trend across compute holds fixed)."""
        return f"{self.n_layers} layers, head size {self.head_dim}"


def point_size(search_cfg: Any) -> PointSize:
    """The size of one run of a point whose `SearchConfig` has its steps resolved (uniform profile:
    every profile of the budget has the same counts)."""
    model = trial_shape(search_cfg, ProfileSpec.parse("uniform"))[2]
    counts = count_params(model)
    tokens = search_cfg.train.steps * search_cfg.train.tokens_per_step * model.seq_len
    return PointSize(
        counts.non_embedding,
        counts.total,
        search_cfg.train.steps,
        tokens,
        flops_per_token(model),
        n_layers=model.n_layers,
        d_model=model.d_model,
        n_heads=model.n_heads,
    )


def point_identity(search_cfg: Any) -> tuple[Any, ...]:
    """What makes two points one: the uniform model a point's `SearchConfig` trains (every field),
    its MLP budget and its steps. `tiny@1` and `tiny:n_layers=2@1` (tiny has 2 layers), or one set
    of overrides in two orders, are one point."""
    model = trial_shape(search_cfg, ProfileSpec.parse("uniform"))[2]
    budget = budget_for(search_cfg)
    return (model.to_json(indent=None), budget.base_width, budget.multiple_of, search_cfg.train.steps)


def check_overrides_reach(spec: PointSpec, search_cfg: Any) -> None:
    """Every override of `spec` is what the point trains: the value it gave is the built model's
    (or its budget's), else a `ConfigError` naming the override that would be lost."""
    model = trial_shape(search_cfg, ProfileSpec.parse("uniform"))[2]
    budget = budget_for(search_cfg)
    built = {**model.to_dict(), "base_width": budget.base_width, "multiple_of": budget.multiple_of}
    for key, value in spec.model.items():
        if key not in built or built[key] != value:
            raise ConfigError(
                f"point {spec.text}: {key}={value} does not reach the model it trains ({key}="
                f"{built.get(key, 'not a field of the model')}); remove it or give a shape override"
            )


def resolve_length(search_cfg: Any) -> Any:
    """`search_cfg` with `train.steps` derived from its `train.tokens_per_param` for its uniform
    model (every profile of a budget has the same count), as every search resolves it."""
    if not search_cfg.train.tokens_per_param:
        return search_cfg
    model = trial_shape(search_cfg, ProfileSpec.parse("uniform"))[2]
    train = with_tokens_per_param(search_cfg.train, count_params(model).non_embedding, model.seq_len)
    return search_cfg.replace(train=train)


def parse_count(text: str) -> float | None:
    """'440m' -> 4.4e8, '1.3b' -> 1.3e9, '2.5e8' -> 2.5e8; None when `text` is no count."""
    m = _COUNT.match(text)
    if not m:
        return None
    value = float(m.group(1)) * _SCALE[m.group(2).lower()]
    return value if math.isfinite(value) and value > 0 else None


def target_of(text: str, arch: str, tokens_per_param: float) -> Any:
    """The `trend.Target` named by `text` (a preset or a parameter count) trained at
    `tokens_per_param` tokens per non-embedding parameter."""
    from tlmsearch.ladders.trend import Target  # lazy: heavy (numpy)

    if not (math.isfinite(tokens_per_param) and tokens_per_param > 0):
        raise ConfigError(f"target tokens per parameter {tokens_per_param} must be positive")
    if text in PRESETS:
        model = PRESETS[text].model_config(arch)
        n = count_params(model).non_embedding
        return Target(
            name=text,
            compute=flops_per_token(model) * tokens_per_param * n,
            params=float(n),
            tokens_per_param=tokens_per_param,
            how=f"preset {text} at {arch}: exact FLOPs per token x {tokens_per_param:g} tokens per parameter",
        )
    n_count = parse_count(text)
    if n_count is None:
        raise ConfigError(
            f"target {text!r} is neither a preset ({', '.join(PRESETS)}) nor a parameter count such as 440m, "
            "1.3b or 2.5e8"
        )
    return Target(
        name=text,
        compute=6.0 * n_count * tokens_per_param * n_count,
        params=n_count,
        tokens_per_param=tokens_per_param,
        how=f"6 N FLOPs per token (a count has no shape: attention scores and the LM head not counted) "
        f"x {tokens_per_param:g} tokens per parameter",
    )


__all__ = [
    "NOT_POINT_OVERRIDES",
    "POINT_FORM",
    "PointSize",
    "PointSpec",
    "check_overrides_reach",
    "parse_count",
    "parse_point",
    "point_identity",
    "point_size",
    "resolve_length",
    "target_of",
]
