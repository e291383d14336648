"""Frozen configuration dataclasses and their JSON/YAML round trip.

Every config is a `@dataclass(frozen=True, kw_only=True)` that mixes in `Config`, holds only
plain data (ints, floats, strings, tuples, nested configs, str-keyed dicts) and validates
itself in `__post_init__` with messages that name the field and the allowed values.
`from_dict(to_dict(c)) == c` holds for all of them. This module imports no torch.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar, Union, get_args, get_origin

# The architecture registry (torch-free; it imports nothing from this module). ARCHITECTURE_NAMES,
# the registered families' names (a live view), is re-exported for the CLI and search configs.
from tlmsearch.core.architectures import ARCHITECTURE_NAMES as ARCHITECTURE_NAMES
from tlmsearch.core.architectures import ARCHITECTURES, architecture
from tlmsearch.core.validate import MAX_LAYERS, MAX_SEED, MAX_WIDTH, check_int, load_yaml, read_text
from tlmsearch.errors import ConfigError

C = TypeVar("C", bound="Config")


class Config:
    """Mixin giving a frozen dataclass dict/JSON/YAML round-tripping and `replace`."""

    # fields whose type depends on another field (ModelConfig.options on its arch): passed by
    # `from_dict` as given and skipped by `check_field_types`; the class's `__post_init__` reads them
    _RESOLVED_IN_POST_INIT: ClassVar[frozenset[str]] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready data: tuples become lists, nested configs become dicts."""
        return {f.name: _to_plain(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "") -> Self:
        """Build from plain data; unknown keys and wrong types are a `ConfigError`."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where or cls.__name__}: expected a mapping, got {type(data).__name__}")
        fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
        unknown = sorted(k if isinstance(k, str) else repr(k) for k in set(data) - set(fields))
        if unknown:
            raise ConfigError(
                f"{where or cls.__name__}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(fields)}"
            )
        hints = _type_hints(cls)
        prefix = f"{where}." if where else ""
        kwargs = {
            name: value if name in cls._RESOLVED_IN_POST_INIT else _from_plain(value, hints[name], prefix + name)
            for name, value in data.items()
        }
        try:
            return cls(**kwargs)
        except TypeError as exc:  # a missing required field
            raise ConfigError(f"{where or cls.__name__}: {exc}") from None

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_json(cls, text: str) -> Self:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{cls.__name__}: invalid JSON ({exc})") from None
        return cls.from_dict(data)

    def to_yaml(self) -> str:
        import yaml

        return str(yaml.safe_dump(self.to_dict(), sort_keys=False))

    @classmethod
    def from_yaml(cls, text: str) -> Self:
        return cls.from_dict(load_yaml(text, cls.__name__) or {})

    def save(self, path: str | Path) -> Path:
        """Write as YAML (`.yaml`/`.yml`) or JSON (anything else)."""
        path = Path(path)
        text = self.to_yaml() if path.suffix in (".yaml", ".yml") else self.to_json() + "\n"
        path.write_text(text)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Self:
        path = Path(path)
        text = read_text(path, "config file")
        if path.suffix not in (".yaml", ".yml"):
            return cls.from_json(text)
        if load_yaml(text, str(path)) is None:  # else an empty file would silently mean every default
            raise ConfigError(f"{path}: holds no settings (an empty or null YAML document)")
        return cls.from_yaml(text)

    def replace(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]


# ----------------------------------------------------------------------------- conversion


_HINTS: dict[type, dict[str, Any]] = {}


def _type_hints(cls: type) -> dict[str, Any]:
    """The resolved field types of a config class, resolved once (resolving the annotations'
    text was most of the cost of `from_dict`, and a class's annotations never change)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _to_plain(value: Any) -> Any:
    if isinstance(value, Config):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_to_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _to_plain(v) for k, v in value.items()}
    return value


_SHAPES: dict[Any, tuple[Any, tuple[Any, ...]]] = {}


def _shape(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """`(get_origin(hint), get_args(hint))`, worked out once per annotation."""
    try:
        shape = _SHAPES.get(hint)
    except TypeError:  # an unhashable annotation: worked out every time
        return get_origin(hint), get_args(hint)
    if shape is None:
        shape = _SHAPES[hint] = (get_origin(hint), get_args(hint))
    return shape


def _from_plain(value: Any, hint: Any, where: str) -> Any:
    if hint is Any:
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        try:
            return float(value)
        except OverflowError:  # an int beyond float range
            raise ConfigError(
                f"{where}: expected a finite number, got an integer of {int(value).bit_length()} bits"
            ) from None
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    origin, args = _shape(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _from_plain(value, arg, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{where}: {value!r} fits none of {hint}")
    if isinstance(hint, type) and issubclass(hint, Config):
        if isinstance(value, hint):  # a config object given through the Python API
            return value
        return hint.from_dict(value, where=where)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_plain(v, args[0], f"{where}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            raise ConfigError(f"{where}: expected {len(args)} items, got {len(value)}")
        return tuple(_from_plain(v, a, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True)))
    if origin in (dict, Mapping) or hint is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        vhint = args[1] if args else Any
        return {str(k): _from_plain(v, vhint, f"{where}.{k}") for k, v in value.items()}
    return value


def check_value(value: Any, hint: Any, where: str) -> Any:
    """`value` read as a field annotated `hint` would read it from a file (normalised: a list
    becomes a tuple, a mapping its nested config); else a ConfigError naming `where`."""
    return _from_plain(value, hint, where)


def check_field_types(cfg: Config, prefix: str = "") -> None:
    """Refuse a field whose value does not fit its annotation, as `from_dict` would.

    Called first in `__post_init__`, so that a config built through the Python API
    (`TrainConfig(compile="no")`, `SearchConfig(trials=2.5)`) is refused with the same one-line
    message as the same value in a file, not with an AttributeError or TypeError from deep inside.
    Values are normalised as a file's are: a list becomes a tuple, a mapping becomes its nested
    config (`RunConfig(train={"steps": 5})`), an int of a float field a float, a
    whole float of an int field an int; bools are never numbers. `prefix` names the section in
    the messages (e.g. "options.").
    """
    hints = _type_hints(type(cfg))
    for f in dataclasses.fields(cfg):  # type: ignore[arg-type]
        if not f.init or f.name in cfg._RESOLVED_IN_POST_INIT:
            continue
        value = getattr(cfg, f.name)
        checked = _from_plain(value, hints[f.name], prefix + f.name)
        if checked is not value:
            object.__setattr__(cfg, f.name, checked)  # frozen: set the normalised value once


# ----------------------------------------------------------------------------- validation


def check_choice(name: str, value: object, allowed: Collection[object]) -> None:
    """`value in allowed` (a container's own `in`: `ARCHITECTURE_NAMES` also accepts import
    paths of architectures outside the package), else a ConfigError listing `allowed`."""
    if value not in allowed:
        raise ConfigError(f"{name}={value!r} is not allowed; choose one of: {', '.join(map(str, allowed))}")


def check_positive(name: str, value: float, *, allow_zero: bool = False) -> None:
    """`value` > 0 (or >= 0) and finite: NaN fails every comparison, so it is refused by name.

    A value of the wrong type (`--model n_layers=abc` reads as a string) is refused here too,
    before a comparison with it raises a TypeError.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name}={value!r} must be a number {'>= 0' if allow_zero else '> 0'}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{name}={value!r} must be a finite number {'>= 0' if allow_zero else '> 0'}")
    if allow_zero and value < 0:
        raise ConfigError(f"{name}={value!r} must be >= 0")
    if not allow_zero and value <= 0:
        raise ConfigError(f"{name}={value!r} must be > 0")


def check_range(name: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:  # also refuses NaN
        raise ConfigError(f"{name}={value!r} must lie in [{low}, {high}]")


def option(default: Any, help: str, *, choices: Sequence[str] = ()) -> Any:
    """A dataclass field with a default plus its command-line help (and allowed values).

    The CLI derives one flag per field from this metadata (`tlmsearch.cli._config_args`), so
    the help a user reads is written once, beside the field it describes.
    """
    metadata = {"help": help, "choices": choices}
    return dataclasses.field(default=default, metadata=metadata)


# ----------------------------------------------------------------------------- model


@dataclasses.dataclass(frozen=True, kw_only=True)
class ArchOptions(Config):
    """The options of an architecture family: the base of each family's own options class.

    A family with options subclasses this in its spec module (`tlmsearch/models/<name>_spec.py`,
    e.g. `TitansOptions`), checks its fields in its own `__post_init__` and names the class in its
    `ArchSpec(options=...)`; a family without options (the Transformer) uses this class itself,
    which has no fields. `ModelConfig.options` holds the options of its `arch`, and its serialized
    form holds only that family's fields (`resolve_options`). A bare `ArchOptions()` given for a
    family with options means "no options given": that family's defaults.
    """

    @classmethod
    def of(cls, cfg: Any) -> Self:
        """`cfg.options` as this family's options class (the typed view a family's module and
        spec read); a TypeError for a config of another family, which is a bug of the caller."""
        options = cfg.options
        if not isinstance(options, cls):
            raise TypeError(f"{cls.__name__}.of: arch={cfg.arch!r} holds {type(options).__name__}")
        return options


def options_class(arch: str) -> type[ArchOptions]:
    """The options class of architecture `arch` (`ArchSpec.options`; `ArchOptions` when it has none)."""
    kind = architecture(arch).options
    return ArchOptions if kind is None else kind


def _option_names(kind: type[ArchOptions]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind) if f.init)


def resolve_options(arch: str, value: Any, where: str = "options") -> ArchOptions:
    """`value` as the options of `arch`: a mapping of that family's fields (checked by its class),
    an instance of its class, or a bare `ArchOptions()` (its defaults). A field of another family
    is a ConfigError naming the family that owns it and the options `arch` allows."""
    kind = options_class(arch)
    if isinstance(value, ArchOptions):
        if type(value) is kind:
            return value
        if type(value) is ArchOptions:  # no options given: the family's defaults
            return kind()
        of = [name for name in ARCHITECTURES if options_class(name) is type(value)]
        allowed = _option_names(kind)
        raise ConfigError(
            f"{where}: {type(value).__name__} {'of ' + ', '.join(of) + ' ' if of else ''}given for "
            f"arch={arch!r}; its options: {', '.join(allowed) if allowed else 'none'}"
        )
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
    allowed = _option_names(kind)
    unknown = [k if isinstance(k, str) else repr(k) for k in value if k not in allowed]
    if unknown:
        classes = {name: options_class(name) for name in ARCHITECTURES}
        notes = []
        for key in unknown:
            owners = [name for name, cls in classes.items() if key in _option_names(cls)]
            notes.append(f"{key} (an option of {', '.join(owners)})" if owners else key)
        raise ConfigError(
            f"{where}: {', '.join(notes)} {'is not an option' if len(unknown) == 1 else 'are not options'} of "
            f"arch={arch!r}; its options: {', '.join(allowed) if allowed else 'none'}"
        )
    return kind.from_dict(value, where=where)


# ModelConfig's integer fields and their upper bounds (the lower bound is 1)
MODEL_INT_BOUNDS: dict[str, int] = {
    "d_model": MAX_WIDTH,
    "n_layers": MAX_LAYERS,
    "n_heads": MAX_WIDTH,
    "seq_len": 2**24,
    "vocab_size": 2**24,
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelConfig(Config):
    """One concrete model: architecture family, shape, and the per-layer MLP widths."""

    _RESOLVED_IN_POST_INIT: ClassVar[frozenset[str]] = frozenset({"options"})  # options: by arch

    arch: str
    d_model: int
    n_layers: int
    n_heads: int
    mlp_widths: tuple[int, ...]
    seq_len: int
    vocab_size: int = 256
    tie_embeddings: bool = True
    init_std: float = 0.02
    rope_theta: float = 10000.0
    norm_eps: float = 1e-6
    # the options of `arch`'s family (`ArchSpec.options`): a mapping of its fields is read as its
    # options class by `__post_init__` (`resolve_options`); the default is that family's defaults
    options: ArchOptions = dataclasses.field(default_factory=ArchOptions)
    # Per-layer attention width (head size fixed at d_model / n_heads): query heads of each layer,
    # () = n_heads in every layer; key/value heads of each layer (grouped-query attention, each
    # dividing its layer's query heads), () = as many as the query heads. A tuple that says the
    # default is stored as (), so a model has one config; `to_dict` leaves () out, so records
    # written before these fields existed read and compare as they were.
    attn_heads: tuple[int, ...] = ()
    kv_heads: tuple[int, ...] = ()
    # Per-layer block (residual-stream) width: block l reads, updates and writes the first
    # block_widths[l] coordinates of the residual stream (a whole number of heads of the fixed head
    # size; its heads default to block_widths[l] / head_dim), () = d_model in every layer. Only
    # families whose spec allows it (`ArchSpec.block_widths`); stored as () when every entry is
    # d_model and left out of `to_dict` then, as the head fields are.
    block_widths: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        check_field_types(self)  # tie_embeddings: "maybe" named here, not deep inside
        spec = architecture(self.arch)  # a ConfigError naming the registered families
        # the family's own options class checks its fields (options: 5 and another family's option refused)
        object.__setattr__(self, "options", resolve_options(self.arch, self.options))
        # integers with bounds far above any model one machine trains, so that a typo (seq_len
        # 1e8, 1e5 layers) is one line here; memory is checked by `validate.check_training_fits`
        for name, high in MODEL_INT_BOUNDS.items():
            check_int(name, getattr(self, name), 1, high)
        if self.d_model % self.n_heads:
            raise ConfigError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                "choose n_heads among the divisors of d_model"
            )
        if (self.d_model // self.n_heads) % 2:
            raise ConfigError(f"head size d_model/n_heads={self.d_model // self.n_heads} must be even (RoPE)")
        if len(self.mlp_widths) != self.n_layers:
            raise ConfigError(
                f"mlp_widths has {len(self.mlp_widths)} entries; it needs one per layer (n_layers={self.n_layers})"
            )
        if any(not isinstance(w, int) or w <= 0 for w in self.mlp_widths):
            raise ConfigError(f"mlp_widths={self.mlp_widths} must all be positive integers")
        self._check_block_widths(spec.block_widths)
        self._check_attention_heads()
        check_positive("init_std", self.init_std)
        check_positive("rope_theta", self.rope_theta)
        check_positive("norm_eps", self.norm_eps)
        spec.validate(self)  # the architecture's own checks (tlmsearch.models.<arch>_spec)

    def _check_block_widths(self, allowed: bool) -> None:
        """Per-layer residual widths: one per layer, positive, bounded; all d_model becomes ()
        (today's model, in every family); otherwise whole heads, in a family that builds them."""
        widths = self.block_widths
        if not widths:
            return
        if len(widths) != self.n_layers:
            raise ConfigError(
                f"block_widths has {len(widths)} entries; it needs one per layer (n_layers={self.n_layers}) or none"
            )
        for layer, w in enumerate(widths):
            check_int(f"block_widths[{layer}]", w, 1, MAX_WIDTH)
        if widths == (self.d_model,) * self.n_layers:
            object.__setattr__(self, "block_widths", ())  # frozen: the canonical form, set once
            return
        if not allowed:
            families = [name for name in ARCHITECTURES if architecture(name).block_widths]
            raise ConfigError(
                f"block_widths: arch={self.arch!r} has one residual width in every layer; "
                f"per-layer block widths are built by: {', '.join(families)}"
            )
        for layer, w in enumerate(widths):
            if w % self.head_dim:
                raise ConfigError(
                    f"block_widths[{layer}]={w} is not a whole number of heads of size {self.head_dim} "
                    f"(d_model / n_heads, fixed in every layer); choose a multiple of {self.head_dim}"
                )

    def _check_attention_heads(self) -> None:
        """Per-layer query and key/value heads: one entry per layer, positive, bounded, each
        layer's KV heads dividing its query heads; the defaults written out become ()."""
        high = MAX_WIDTH // self.head_dim  # a layer's attention width stays a valid width
        for name in ("attn_heads", "kv_heads"):
            heads = getattr(self, name)
            if heads and len(heads) != self.n_layers:
                raise ConfigError(
                    f"{name} has {len(heads)} entries; it needs one per layer (n_layers={self.n_layers}) or none"
                )
            for layer, h in enumerate(heads):
                check_int(f"{name}[{layer}]", h, 1, high)
        default = tuple(self.block_width(layer) // self.head_dim for layer in range(self.n_layers))
        query = self.attn_heads or default
        for layer, (h, g) in enumerate(zip(query, self.kv_heads, strict=False)):
            if h % g:
                divisors = [k for k in range(1, min(h, 4096) + 1) if h % k == 0]
                listed = ", ".join(map(str, divisors)) + ("" if h <= 4096 else ", ...")
                raise ConfigError(
                    f"kv_heads[{layer}]={g} does not divide attn_heads[{layer}]={h}; "
                    f"choose among its divisors: {listed}"
                )
        if self.attn_heads == default:
            object.__setattr__(self, "attn_heads", ())  # frozen: the canonical form, set once
        if self.kv_heads == query:
            object.__setattr__(self, "kv_heads", ())

    def to_dict(self) -> dict[str, Any]:
        """As `Config.to_dict`, without the per-layer head fields when they hold their defaults."""
        data = super().to_dict()
        for name in ("attn_heads", "kv_heads", "block_widths"):
            if not data[name]:
                del data[name]
        return data

    def block_width(self, layer: int) -> int:
        """Residual width of block `layer` (`block_widths`, default d_model)."""
        return self.block_widths[layer] if self.block_widths else self.d_model

    def query_heads(self, layer: int) -> int:
        """Query heads of layer `layer` (`attn_heads`, default its block width / head_dim: n_heads
        when the block is d_model wide)."""
        if self.attn_heads:
            return self.attn_heads[layer]
        return self.block_width(layer) // self.head_dim if self.block_widths else self.n_heads

    def key_value_heads(self, layer: int) -> int:
        """Key/value heads of layer `layer` (`kv_heads`, default its query heads)."""
        return self.kv_heads[layer] if self.kv_heads else self.query_heads(layer)

    @property
    def uniform_attention(self) -> bool:
        """Every layer has n_heads query heads and as many key/value heads, over a d_model-wide
        block (today's model)."""
        return not self.attn_heads and not self.kv_heads and not self.block_widths

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


# ----------------------------------------------------------------------------- training and data

SCHEDULES: tuple[str, ...] = ("cosine", "wsd", "constant")
DTYPES: tuple[str, ...] = ("float32", "bfloat16")
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")
TOKENIZERS: tuple[str, ...] = ("byte", "bpe")
INIT_MODES: tuple[str, ...] = ("keyed", "stream")
PARAMETRIZATIONS: tuple[str, ...] = ("standard", "width")


# TrainConfig's integer fields and their upper bounds (the lower bound is 1, or 0 where listed)
TRAIN_INT_BOUNDS: dict[str, int] = {
    "steps": 10**9,
    "batch_size": 2**16,
    "grad_accum": 2**16,
    "warmup_steps": 10**9,
    "eval_interval": 10**9,
    "eval_windows": 2**20,
    "threads": 4096,
    "seed": MAX_SEED,
    "checkpoint_interval": 10**9,
}
ALL_WINDOWS = -1  # final_eval_windows: the whole validation split, tiled without overlap
TRAIN_ZERO_ALLOWED = frozenset({"warmup_steps", "threads", "seed", "checkpoint_interval"})


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainConfig(Config):
    """One short training trial. Defaults suit a search trial on a CPU (a few hundred steps)."""

    steps: int = option(300, "optimizer steps; warmup and eval interval keep their own values")
    tokens_per_param: float = option(
        0.0,
        "trial length in tokens per NON-EMBEDDING parameter (embeddings and the LM head do not count): "
        "steps = ceil(tokens_per_param x non-embedding parameters / tokens per step), derived once before "
        "training and printed; 0 = use steps; not with --steps",
    )
    batch_size: int = option(16, "sequences per micro-batch")
    grad_accum: int = option(1, "micro-batches per optimizer step")
    lr: float = option(2e-3, "peak learning rate")
    min_lr_ratio: float = option(0.1, "final lr = min_lr_ratio * lr (cosine, wsd)")
    warmup_steps: int = option(20, "linear warmup from 0 (capped at steps)")
    schedule: str = option("cosine", "learning-rate schedule (wsd = warmup-stable-decay)", choices=SCHEDULES)
    decay_fraction: float = option(0.2, "wsd: share of the steps spent in the final linear decay")
    weight_decay: float = option(0.1, "AdamW weight decay, applied to matrices and embeddings only")
    betas: tuple[float, float] = option((0.9, 0.95), "AdamW betas")
    eps: float = option(1e-8, "AdamW epsilon")
    grad_clip: float = option(1.0, "max global gradient norm; 0 = no clipping")
    eval_interval: int = option(50, "evaluate every this many steps (and always at the last step)")
    eval_windows: int = option(32, "number of fixed validation windows of seq_len tokens")
    final_eval_windows: int = option(
        0,
        "validation windows at the last evaluation (the trial's result): 0 = eval_windows; "
        f"{ALL_WINDOWS} = every non-overlapping window of the validation split",
    )
    ema_decay: float = option(
        0.0,
        "keep an exponential moving average of the weights with this decay and evaluate it as the "
        "trial's result (val_loss; the last weights' loss is val_loss_last); 0 = off",
    )
    dtype: str = option("float32", "float32, or bfloat16 autocast", choices=DTYPES)
    device: str = option("auto", "where to train", choices=DEVICES)
    compile: bool = option(False, "torch.compile the model")
    threads: int = option(0, "torch intra-op threads per run; 0 = torch's default (Ray trials: CPUs per trial)")
    seed: int = option(0, "seed of model init and batch order (the first seed where a command trains several)")
    checkpoint_interval: int = option(0, "steps between checkpoints; 0 = at every evaluation")
    init: str = option(
        "keyed",
        "how the seed becomes weights: keyed (common random numbers: profiles of a budget share every "
        "tensor of equal shape and their MLPs' common units) or stream (one RNG stream in module order, "
        "as runs before keyed init)",
        choices=INIT_MODES,
    )
    parametrization: str = option(
        "standard",
        "standard (every layer's MLP with the same init std and learning rate) or width (muP-style: each "
        "layer's MLP down-projection gets init std x sqrt(base/width) and learning rate x base/width, base = "
        "the budget's uniform width; see tlmsearch.models.parametrization)",
        choices=PARAMETRIZATIONS,
    )

    def __post_init__(self) -> None:
        # Integer sizes are bounded so that a typo (batch_size 1e8) is refused here in one line,
        # not by the allocator; the bounds are far above what one machine trains in a trial.
        # Memory of a model and batch together is checked by `validate.check_training_fits`.
        check_field_types(self)
        for name, high in TRAIN_INT_BOUNDS.items():
            check_int(name, getattr(self, name), 0 if name in TRAIN_ZERO_ALLOWED else 1, high)
        for name in ("lr", "eps"):
            check_positive(name, getattr(self, name))  # finite too: NaN and inf are refused
        for name in ("weight_decay", "grad_clip", "tokens_per_param"):
            check_positive(name, getattr(self, name), allow_zero=True)  # NaN, inf, negatives refused
        check_range("min_lr_ratio", self.min_lr_ratio, 0.0, 1.0)
        check_range("decay_fraction", self.decay_fraction, 0.0, 1.0)
        if not 0.0 <= self.ema_decay < 1.0:  # also refuses NaN
            raise ConfigError(f"ema_decay={self.ema_decay!r} must lie in [0, 1) (0 = off)")
        if self.final_eval_windows != ALL_WINDOWS:
            check_int("final_eval_windows", self.final_eval_windows, 0, TRAIN_INT_BOUNDS["eval_windows"])
        check_choice("schedule", self.schedule, SCHEDULES)
        check_choice("dtype", self.dtype, DTYPES)
        check_choice("device", self.device, DEVICES)
        check_choice("init", self.init, INIT_MODES)
        check_choice("parametrization", self.parametrization, PARAMETRIZATIONS)
        if len(self.betas) != 2 or not all(isinstance(b, int | float) and 0.0 <= b < 1.0 for b in self.betas):
            raise ConfigError(f"betas={self.betas} must be two numbers in [0, 1)")

    @property
    def tokens_per_step(self) -> int:
        """Sequences per optimizer step (multiply by seq_len for tokens)."""
        return self.batch_size * self.grad_accum


def steps_for_tokens_per_param(tokens_per_param: float, non_embedding: int, tokens_per_step: int) -> int:
    """The optimizer steps that train `tokens_per_param` tokens per non-embedding parameter:
    ceil(tokens_per_param * non_embedding / tokens_per_step), in exact arithmetic on the number
    as written (20.1 is 201/10, not the float nearest it), so a whole number of steps is never
    rounded up by a representation error. At least one step; a ConfigError for a value that is
    not a finite number > 0 or a step count beyond `TRAIN_INT_BOUNDS`."""
    from fractions import Fraction

    check_positive("tokens_per_param", tokens_per_param)
    check_int("non-embedding parameters", non_embedding, 1, 2**62)
    check_int("tokens per step", tokens_per_step, 1, 2**62)
    exact = Fraction(repr(float(tokens_per_param))) * non_embedding / tokens_per_step
    steps = max(1, math.ceil(exact))
    if steps > TRAIN_INT_BOUNDS["steps"]:
        raise ConfigError(
            f"tokens_per_param={tokens_per_param:g} of {non_embedding:,} non-embedding parameters at "
            f"{tokens_per_step:,} tokens per step needs {steps:,} steps, more than {TRAIN_INT_BOUNDS['steps']:,}"
        )
    return steps


def with_tokens_per_param(train: TrainConfig, non_embedding: int, seq_len: int) -> TrainConfig:
    """`train` with its steps derived from `train.tokens_per_param` for a model of `non_embedding`
    non-embedding parameters and windows of `seq_len` tokens; `train` itself when that is 0."""
    if not train.tokens_per_param:
        return train
    steps = steps_for_tokens_per_param(train.tokens_per_param, non_embedding, train.tokens_per_step * seq_len)
    return train if steps == train.steps else train.replace(steps=steps)


# The regime thresholds (analysis/regime.py says what they let a result claim): the field decides
# architecture questions at >= 20 tokens per non-embedding parameter and screens at >= 5.
DECIDE_TOKENS_PER_PARAM = 20.0
SCREEN_TOKENS_PER_PARAM = 5.0


def screening_train(**overrides: Any) -> TrainConfig:
    """The default trial of a search and a study: 5 tokens per non-embedding parameter, a
    warmup-stable-decay learning rate, and the result taken on the whole validation split.

    Chosen from bench/README.md section 14 (`python -m bench.bench_noise`, cpu-xs Transformer,
    6 paired seeds): against the earlier default (300 steps, cosine lr, 32 validation windows,
    about 1.3 tokens per parameter) the paired sd of uniform - cosine falls about 2x and the seeds
    a verdict needs fall from about 40 to about 10, at about 3.3x the CPU of one trial: the same
    cost per decision, in the regime where a width allocation can show its effect. A partial
    `train` section of a config file starts from TrainConfig's own defaults, not from these.
    """
    return TrainConfig(
        **{
            "tokens_per_param": SCREEN_TOKENS_PER_PARAM,
            "schedule": "wsd",
            "final_eval_windows": ALL_WINDOWS,
            **overrides,
        }
    )


def deciding_train(train: TrainConfig, tokens_per_param: float = DECIDE_TOKENS_PER_PARAM) -> TrainConfig:
    """The trial that decides between profiles screened with `train` (verify, a study's
    verification and transfer): at least `tokens_per_param` (default 20) tokens per parameter
    when `train` gives its length in tokens per parameter (a search's default: 5, the screening
    length); `train` itself when it gives its steps, or already trains that long (the user
    chose), or `tokens_per_param` is 0."""
    if 0 < train.tokens_per_param < tokens_per_param:
        return train.replace(tokens_per_param=tokens_per_param)
    return train


def _si(x: float) -> str:
    """430_000 -> "0.43M", 8.6e6 -> "8.6M", 20_600 -> "20.6K" (three significant digits at most)."""
    for scale, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= 0.1 * scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def trial_length_text(tokens_per_param: float, non_embedding: int, tokens_per_step: int, steps: int) -> str:
    """'20 tokens per parameter of 0.43M non-embedding parameters = 8.6M tokens = 4,199 steps of
    2,048 tokens': how a step count was derived (`steps_for_tokens_per_param`)."""
    return (
        f"{tokens_per_param:g} tokens per parameter of {_si(non_embedding)} non-embedding parameters = "
        f"{_si(tokens_per_param * non_embedding)} tokens = {steps:,} steps of {tokens_per_step:,} tokens"
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataConfig(Config):
    """Where the text comes from and how it becomes tokens.

    corpus: a built-in name ("shakespeare", "mix", "bible-web", the other "bible-*" translations,
    "pydoc"; `tlmsearch data` lists them with their sizes), "text:PATH" (a .txt/.md file
    or a folder of them), "tokens:PATH" (nanoGPT-style uint16 train.bin/val.bin) or
    "hf:NAME[:CONFIG]" (Hugging Face `datasets`, needs the library and a network or its cache).
    """

    corpus: str = option(
        "shakespeare",
        "shakespeare, mix (every shipped corpus, 44 MB), bible-web, bible-* (tlmsearch data lists them), pydoc, "
        "text:PATH, tokens:PATH or hf:NAME[:CONFIG]",
    )
    tokenizer: str = option(
        "byte", "byte (vocab 256, bits per byte exact) or bpe (byte-level BPE); the CLI also takes bpe:VOCAB"
    )
    bpe_vocab: int = option(4096, "vocab size when tokenizer is bpe")
    val_fraction: float = option(0.1, "held-out share where a corpus has no natural split")
    cache_dir: str = option("", "cache of corpora and tokenizers; empty = $TLMSEARCH_CACHE, else ~/.cache/tlmsearch")

    def __post_init__(self) -> None:
        check_field_types(self)
        if not self.corpus:
            raise ConfigError("corpus must not be empty; e.g. shakespeare, pydoc, text:PATH, tokens:PATH")
        check_choice("tokenizer", self.tokenizer, TOKENIZERS)
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in self.corpus + self.cache_dir):
            raise ConfigError("corpus and cache_dir must not contain control characters (a newline, a NUL, ...)")
        if not 257 <= self.bpe_vocab <= 65535:
            raise ConfigError(f"bpe_vocab={self.bpe_vocab} must lie in [257, 65535] (tokens are stored as uint16)")
        check_range("val_fraction", self.val_fraction, 0.001, 0.5)

    def cache_path(self) -> Path:
        """The cache directory this config resolves to now."""
        import os

        if self.cache_dir:
            return Path(self.cache_dir).expanduser()
        env = os.environ.get("TLMSEARCH_CACHE")
        return Path(env).expanduser() if env else Path.home() / ".cache" / "tlmsearch"
