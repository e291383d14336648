"""Command-line flags derived from the config dataclasses.

Every field of a config becomes one flag `--kebab-case-name`: its type comes from the field's
annotation, its help and allowed values from the field's metadata (`tlmsearch.core.base.option`),
and --help shows the dataclass default. A flag that is not given stays out of the overrides,
so a config file's value (or the search's, for `verify`) is kept. Commands that train share
one set of training and data flags built here, so a flag means the same in each of them:

- `--steps N` sets `TrainConfig.steps` only; warmup and eval interval keep their values (the
  trainer caps both at the step count). `--tokens-per-param X` derives the steps instead, from
  the model's non-embedding parameters (`config.steps_for_tokens_per_param`); not both.
- `--seed S` is the training seed; commands that train several seeds start at S.
- `--tokenizer bpe:VOCAB` sets `tokenizer` and `bpe_vocab` at once.
- `--train KEY=VALUE` / `--data KEY=VALUE` set any field by name (values are YAML scalars).
- `--arch`, `--preset`, `--base-width`, `--model KEY=VALUE` choose the model (not in `verify`,
  which re-trains the search's models).

Only `tlmsearch.core.base` (no torch) is imported here, so `tlmsearch --help` stays fast.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tlmsearch.configs.presets import PRESETS
from tlmsearch.core.base import ALL_WINDOWS, ARCHITECTURE_NAMES, Config, DataConfig, TrainConfig, screening_train
from tlmsearch.errors import ConfigError

# a flag value that expands into several fields of its section (e.g. bpe:4096)
Expander = Callable[[Any], dict[str, Any]]


def parse_tokenizer(text: str) -> dict[str, Any]:
    """'byte' | 'bpe' | 'bpe:4096' -> DataConfig fields."""
    kind, _, vocab = str(text).partition(":")
    if kind == "byte" and not vocab:
        return {"tokenizer": "byte"}
    if kind == "bpe":
        if not vocab:
            return {"tokenizer": "bpe"}
        if vocab.isdigit():
            return {"tokenizer": "bpe", "bpe_vocab": int(vocab)}
    raise ConfigError(f"tokenizer {text!r} is not allowed; use byte, bpe or bpe:VOCAB (e.g. bpe:4096)")


# per-section flag values that expand into several fields
EXPANDERS: dict[str, dict[str, Expander]] = {"data": {"tokenizer": parse_tokenizer}}


def _dest(section: str, name: str) -> str:
    return f"{section}.{name}"


def _shown(field: dataclasses.Field[Any]) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    if isinstance(value, tuple):
        return " ".join(map(str, value)) or "none"
    return repr(value) if value == "" else str(value)


def _kind(hint: Any) -> dict[str, Any] | None:
    """argparse keywords for a field annotation; None for fields a flag cannot express."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if set(rest) == {float, str}:  # a number or a word ("auto"): the config reads the text
            return {"type": str}
        return _kind(rest[0]) if len(rest) == 1 else None
    if hint is bool:
        return {"action": argparse.BooleanOptionalAction}
    if hint in (int, float, str):
        return {"type": hint}
    if origin is tuple and args:
        if len(args) == 2 and args[1] is Ellipsis and args[0] in (int, float, str):
            return {"type": args[0], "nargs": "*"}
        if all(a in (int, float, str) for a in args) and len(set(args)) == 1:
            return {"type": args[0], "nargs": len(args)}
    return None


def add_config_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    cls: type[Config],
    *,
    section: str,
    skip: Iterable[str] = (),
    names: Mapping[str, str] | None = None,
    default_text: Mapping[str, str] | None = None,
    helps: Mapping[str, str] | None = None,
    types: Mapping[str, Callable[[str], Any]] | None = None,
) -> list[str]:
    """One flag per field of the dataclass `cls`; returns the field names given a flag.

    Values land in `args` under `"<section>.<field>"` (None when not given); read them back
    with `config_overrides(args, section)`. `names` renames a field's flag (field -> "--flag");
    `default_text` (field -> text, "*" for every other field) replaces the dataclass default in
    the help, where something else supplies the default (e.g. the search a command re-trains);
    `helps` (field -> text) replaces a field's help where a command reads it differently (a
    study's search settings, `tlmsearch.configs.study.SEARCH_HELP`); `types` (field -> callable)
    replaces a field's parser (e.g. a whole number also written 30e9).
    Fields whose type no flag can express (mappings, nested configs) are left to KEY=VALUE.
    """
    names = dict(names or {})
    hints = typing.get_type_hints(cls)
    added = []
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if field.name in skip or not field.init:
            continue
        kind = _kind(hints[field.name])
        if kind is None:
            continue
        help_text = str((helps or {}).get(field.name) or field.metadata.get("help", "")).replace("%", "%%")
        if field.name in (types or {}):
            kind["type"] = (types or {})[field.name]
        choices = tuple(field.metadata.get("choices", ()))
        if choices:
            kind["choices"] = choices
        if kind.get("nargs") and kind["nargs"] != "*":
            kind["metavar"] = tuple(f"{field.name.upper()}{i + 1}" for i in range(kind["nargs"]))
        elif "type" in kind and not choices:
            kind["metavar"] = field.name.upper()
        flag = names.get(field.name, "--" + field.name.replace("_", "-"))
        texts = default_text or {}
        shown = texts.get(field.name) or texts.get("*") or _shown(field)
        parser.add_argument(
            flag, dest=_dest(section, field.name), default=None, help=f"{help_text} (default: {shown})", **kind
        )
        added.append(field.name)
    return added


def config_overrides(args: argparse.Namespace, section: str) -> dict[str, Any]:
    """The fields of `section` given on the command line (flags, then KEY=VALUE pairs)."""
    prefix = section + "."
    out: dict[str, Any] = {}
    expanders = EXPANDERS.get(section, {})
    for dest, value in vars(args).items():
        if not dest.startswith(prefix) or value is None:
            continue
        name = dest[len(prefix) :]
        if name in expanders:
            out.update(expanders[name](value))
        else:
            out[name] = list(value) if isinstance(value, list) else value
    for key, value in parse_pairs(getattr(args, f"{section}_pairs", None), f"--{section}").items():
        if key in expanders and isinstance(value, str):
            out.update(expanders[key](value))
        else:
            out[key] = value
    return out


def parse_pairs(items: Iterable[str] | None, flag: str) -> dict[str, Any]:
    """KEY=VALUE texts -> {KEY: VALUE} with VALUE read as a YAML scalar (3, 0.1, true, [1, 2])."""
    out: dict[str, Any] = {}
    if not items:
        return out
    import yaml

    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"{flag} {item!r}: write KEY=VALUE")
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ConfigError(f"{flag} {item!r}: the value is not a YAML scalar or list") from None
        out[key.strip()] = _number(parsed)
    return out


def parse_names(text: str, flag: str, example: str) -> list[str]:
    """A comma-separated list ("transformer,titans") -> its items, stripped.

    An empty item ("a,,b", "a,") or an item given twice is refused by `flag`: neither is what
    a person means, and a silent drop or a doubled item changes what runs. A text with no name
    at all ("", " , ") gives [] (the caller's config refuses an empty list with its allowed values).
    """
    items = [item.strip() for item in text.split(",")]
    if not any(items):  # "", " , ": no name at all; the caller's config names what is allowed
        return []
    if "" in items:
        raise ConfigError(f"{flag} {text!r} has an empty item; write names separated by single commas, e.g. {example}")
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise ConfigError(f"{flag} {text!r} names {', '.join(repeated)} more than once; give each once")
    return items


def _number(value: Any) -> Any:
    """YAML 1.1 reads 1e-7 as a string; read it as the number a user means."""
    if isinstance(value, str):
        try:
            return float(value) if value.strip().lower() not in ("nan", "inf", "-inf", "infinity") else value
        except ValueError:
            return value
    return value


# ----------------------------------------------------------------------------- shared flag groups


def add_model_arguments(p: argparse.ArgumentParser, *, family: bool = False) -> None:
    """--arch, --preset, --base-width, --model KEY=VALUE (and --family for `train`)."""
    g = p.add_argument_group("model")
    g.add_argument("--arch", help=f"architecture: {', '.join(ARCHITECTURE_NAMES)} (default: transformer)")
    g.add_argument("--preset", help=f"model shape preset: {', '.join(PRESETS)} (default: cpu-s)")
    if family:
        g.add_argument(
            "--family", metavar="SPEC", help="width profile, e.g. cosine:start=1.5,end=0.5 (default: uniform)"
        )
    g.add_argument(
        "--base-width", type=int, metavar="WIDTH", help="fixed budget: MLP width per layer (default: the preset's)"
    )
    g.add_argument(
        "--model",
        dest="model_pairs",
        action="append",
        metavar="KEY=VALUE",
        help="override a preset shape or ModelConfig field, e.g. n_layers=4 (repeatable)"
        + ("; preset=, arch=, family=, base_width= mean their flags" if family else ""),
    )


def screening_default_text() -> dict[str, str]:
    """--help defaults of a command whose trials start from `config.screening_train` (search,
    study): the fields where it differs from TrainConfig's own defaults."""
    screening, plain = screening_train(), TrainConfig()
    texts = {
        name: str(value)
        for name, value in screening.to_dict().items()
        if value != getattr(plain, name) and name != "final_eval_windows"
    }
    texts["final_eval_windows"] = f"{ALL_WINDOWS} = the whole validation split"
    texts["steps"] = f"derived from --tokens-per-param {screening.tokens_per_param:g}"
    return texts


def add_training_arguments(p: argparse.ArgumentParser, *, default_text: Mapping[str, str] | None = None) -> None:
    """Every TrainConfig and DataConfig field as a flag, plus --train/--data KEY=VALUE."""
    g = p.add_argument_group("training (TrainConfig)")
    add_config_arguments(g, TrainConfig, section="train", default_text=default_text)
    g.add_argument(
        "--train", dest="train_pairs", action="append", metavar="KEY=VALUE", help="any TrainConfig field (repeatable)"
    )
    g = p.add_argument_group("data (DataConfig)")
    add_config_arguments(g, DataConfig, section="data", default_text=default_text)
    g.add_argument(
        "--data", dest="data_pairs", action="append", metavar="KEY=VALUE", help="any DataConfig field (repeatable)"
    )


def training_overrides(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """(TrainConfig overrides, DataConfig overrides) given on the command line.

    The trial length is given once: `--steps` with a `--tokens-per-param` above 0 is refused,
    and `--steps` alone sets `tokens_per_param` to 0, so that it replaces a trial length in
    tokens per parameter that a config file (or the search a command re-trains) holds.
    """
    train = config_overrides(args, "train")
    if "steps" in train:
        tpp = train.setdefault("tokens_per_param", 0.0)
        if not isinstance(tpp, int | float) or isinstance(tpp, bool) or tpp != 0:
            shown = f"{tpp:g}" if isinstance(tpp, float) else str(tpp)
            raise ConfigError(
                f"--steps {train['steps']} and --tokens-per-param {shown} both set the trial length; give one "
                "(--tokens-per-param derives the steps from the model's non-embedding parameters)"
            )
    return train, config_overrides(args, "data")


def apply_overrides(base: Config, overrides: Mapping[str, Any], where: str) -> Any:
    """`base` with `overrides` applied, validated like a config file (unknown fields named)."""
    return type(base).from_dict({**base.to_dict(), **overrides}, where=where)
