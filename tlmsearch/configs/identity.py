"""The identity of a candidate: the model it builds, not its label.

    key = shape_key(model)                       # (mlp_widths, attn_heads, kv_heads, block_widths)
    found = candidates(cfg, ["cosine", "linear:start=1.5,end=0.5"])
    found[0].name                                # "cosine:start=1.5,end=0.5 = linear:start=1.5,end=0.5" at 2 layers

Two profiles whose resolved models have the same per-layer MLP widths (and, for a joint profile,
the same per-layer query heads, key/value heads and block widths) train the same network: at 2
layers cosine 1.5 -> 0.5 and linear 1.5 -> 0.5 are both [1.5, 0.5] x the base width. They are ONE
candidate: trained once, counted once in the verdict's multiple testing, shown under all its names
(`merged_name`). `shape_key` is the one identity of a built model shape; `TrialRecord.arch_key`
reads a record's model through it, and the plans of verify, compare, study and ladder merge their
candidates by it.

`check_distinct_shapes` refuses, in one line before anything trains, a depth at which profiles
the user asked for by name (the baselines, the controls, the compared profiles) build one model,
unless told to go on (`allow_collapsed`): then they run as one merged candidate. Names that build
one model at every depth (`aliases`: `joint:mode=mlp,start=1.5,end=0.5` is cosine 1.5 -> 0.5 by
definition) are merged without a refusal: more layers would not part them. Pure: configs and
profiles only, no torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tlmsearch.configs.resolve import trial_shape
from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.base import ModelConfig
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.profiles.dof import dof_text

ShapeKey = tuple[tuple[int, ...], ...]  # MLP widths, query heads, key/value heads, block widths (() = the preset's)
SHAPE_AXES: tuple[str, ...] = ("mlp_widths", "attn_heads", "kv_heads", "block_widths")
SEP = " = "  # between the names of one merged candidate
DEFAULT_REFERENCE = "cosine:start=1.5,end=0.5"  # the paper's taper: what every candidate is compared with by default


def shape_key(model: ModelConfig | Mapping[str, Any]) -> ShapeKey:
    """What makes two models of one budget the same network: the per-layer MLP widths, and the
    per-layer query heads, key/value heads and block widths (() where the model keeps the
    preset's in every layer; a record's model dict leaves those out). Depth, d_model and the
    heads of the preset are the budget's, equal for every candidate of one comparison."""
    get = model.get if isinstance(model, Mapping) else lambda name, default=None: getattr(model, name, default)
    return tuple(tuple(int(v) for v in get(axis) or ()) for axis in SHAPE_AXES)


def merged_name(names: Sequence[str]) -> str:
    """The names of one candidate, each once, in the order given: "cosine:... = linear:..."."""
    return SEP.join(dict.fromkeys(names))


def split_name(name: str) -> list[str]:
    """The names a merged name stands for (`merged_name` read back)."""
    return name.split(SEP)


@dataclass(frozen=True)
class Candidate:
    """One built model and every name the user gave it (canonical profile texts, first first)."""

    names: tuple[str, ...]
    key: ShapeKey

    @property
    def name(self) -> str:
        return merged_name(self.names)

    @property
    def spec(self) -> ProfileSpec:
        """The profile it trains as: its first name."""
        return ProfileSpec.parse(self.names[0])

    @property
    def widths(self) -> tuple[int, ...]:
        return self.key[0]


def candidates(cfg: SearchConfig, texts: Sequence[str], base_width: int | None = None) -> list[Candidate]:
    """The profiles `texts` as built under `cfg` (at `base_width`, default the search's), merged
    by `shape_key`, in the order of their first name; two spellings of one profile are one name."""
    by_key: dict[ShapeKey, list[str]] = {}
    seen: set[str] = set()  # each profile once, in any spelling (`cosine` is `cosine:start=1.5,end=0.5`)
    for text in texts:
        spec = ProfileSpec.parse(text)
        canonical = str(spec.resolved())
        if canonical in seen:
            continue
        seen.add(canonical)
        key = shape_key(trial_shape(cfg, spec, base_width)[2])
        by_key.setdefault(key, []).append(str(spec))
    return [Candidate(tuple(names), key) for key, names in by_key.items()]


def collapsed(found: Sequence[Candidate]) -> list[Candidate]:
    """The candidates that stand for more than one name."""
    return [c for c in found if len(c.names) > 1]


ALIAS_DEPTHS: tuple[int, ...] = (16, 24)  # deeper models where shapes a depth merged part again


def aliases(cfg: SearchConfig, candidate: Candidate, base_width: int | None = None) -> bool:
    """Whether the names of `candidate` build one model at every depth, not only at this one: the
    same model also at `ALIAS_DEPTHS` layers (a name that does not build there is no alias)."""
    for n_layers in ALIAS_DEPTHS:
        deeper = dataclasses.replace(cfg, model={**cfg.model, "n_layers": n_layers})
        try:
            keys = {shape_key(trial_shape(deeper, ProfileSpec.parse(name), base_width)[2]) for name in candidate.names}
        except ConfigError:
            return False
        if len(keys) > 1:
            return False
    return True


def check_distinct_shapes(
    cfg: SearchConfig,
    texts: Sequence[str],
    *,
    what: str,
    allow: bool = False,
    flag: str = "allow_collapsed (--allow-collapsed)",
    base_width: int | None = None,
    searched: bool = True,
) -> list[Candidate]:
    """The candidates of the named profiles `texts`; a ConfigError in one line when two of them
    build one model at this depth, unless `allow` (then they are one merged candidate). `what`
    names the command, `flag` the option that goes on (`--allow-collapsed` on the command line);
    `searched`: the message states the degrees of freedom of `cfg.space` (a compare or a ladder
    point searches nothing: the free widths alone)."""
    found = candidates(cfg, texts, base_width)
    merged = [c for c in collapsed(found) if not aliases(cfg, c, base_width)]
    if merged and not allow:
        n_layers = len(merged[0].widths)
        same = "; ".join(f"{' and '.join(c.names)} are {list(c.widths)}" for c in merged)
        depth = dof_text(cfg.space if searched else None, n_layers)
        raise ConfigError(
            f"{what}: {same}, one model under several names at {depth}; use more layers "
            f"(model n_layers), drop all but one name of each, or set {flag} to run each as one merged candidate"
        )
    return found


__all__ = [
    "ALIAS_DEPTHS",
    "DEFAULT_REFERENCE",
    "SHAPE_AXES",
    "Candidate",
    "ShapeKey",
    "aliases",
    "candidates",
    "check_distinct_shapes",
    "collapsed",
    "merged_name",
    "shape_key",
    "split_name",
]
