"""The training commands share one set of flags derived from TrainConfig and DataConfig.

Every field of both configs is walked through the parser of each command that trains
(`train`, `search`, `compare`, `verify`) and must land, with the given value, in the config
that command trains with. No training, no Ray: only parsing and config resolution.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from typing import Any

import pytest
from covering import covering

from tlmsearch.cli import build_parser
from tlmsearch.cli.search import _NOT_DERIVED
from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.base import Config, DataConfig, TrainConfig

COMMANDS = ("train", "search", "compare", "verify")
# valid non-default samples for free-text fields (a new one falls back to "sample")
# valid non-default samples for numeric fields whose generic sample is out of range
NUMBER_SAMPLES: dict[str, Any] = {"ema_decay": 0.99, "gpus_per_trial": 0.25}
TEXT_SAMPLES = {
    "corpus": "pydoc", "tokenizer": "bpe", "cache_dir": "/tmp/tlmsearch-cache", "name": "walk", "space": "monotone",
    "lr_calibration": "auto",
}  # fmt: skip


def sample(cls: type[Config], field: dataclasses.Field[Any]) -> tuple[list[str], Any]:
    """(flag tokens, expected value): a valid value that differs from the default."""
    hint = typing.get_type_hints(cls)[field.name]
    default = field.default
    flag = "--" + field.name.replace("_", "-")
    choices = field.metadata.get("choices") or ()
    if choices:
        value = next(c for c in choices if c != default)
        return [flag, value], value
    if field.name in NUMBER_SAMPLES:
        value = NUMBER_SAMPLES[field.name]
        return [flag, repr(value)], value
    if hint is bool:
        return ([flag] if not default else ["--no-" + flag[2:]]), not default
    if hint is int:
        return [flag, str(default + 1)], default + 1
    if hint is float:
        value = default / 2 if default else 1.5
        return [flag, repr(value)], value
    if hint is str:
        value = TEXT_SAMPLES.get(field.name, "sample")
        return [flag, value], value
    if typing.get_origin(hint) is tuple:
        value = tuple(v / 2 for v in default)
        return [flag, *map(repr, value)], value
    raise AssertionError(f"{cls.__name__}.{field.name}: no sample for type {hint}")


def search_config() -> SearchConfig:
    return SearchConfig(preset="tiny", train=TrainConfig(steps=30, eval_interval=10), data=DataConfig(corpus="pydoc"))


def resolve(command: str, argv: list[str]) -> tuple[TrainConfig, DataConfig]:
    """The TrainConfig and DataConfig `command` would train with, given `argv` (its flags)."""
    parser = build_parser()
    if command == "train":
        from tlmsearch.cli.train import resolve_configs

        _, train, data, _ = resolve_configs(parser.parse_args(["train", "--preset", "tiny", *argv]))
        return train, data
    if command == "search":
        from tlmsearch.cli.search import build_config

        cfg = build_config(parser.parse_args(["search", "--preset", "tiny", *argv]))
        assert cfg.seed == cfg.train.seed  # --seed seeds the sampler and every trial's training
        return cfg.train, cfg.data
    if command == "compare":
        from tlmsearch.cli.compare import compare_arguments

        kw = compare_arguments(parser.parse_args(["compare", "--families", "uniform", *argv]))
        train = TrainConfig.from_dict(kw["train"])
        assert kw["seed"] == train.seed  # the first of the seeds
        return train, DataConfig.from_dict(kw["data"])
    from tlmsearch.cli.verify import verify_arguments
    from tlmsearch.configs.verify import retrain_config

    kw = verify_arguments(parser.parse_args(["verify", "runs/x", *argv]))
    cfg, seeds = retrain_config(search_config(), seeds=2, **kw)
    assert seeds[0] == cfg.train.seed
    return cfg.train, cfg.data


FIELDS = [(cls, f) for cls in (TrainConfig, DataConfig) for f in dataclasses.fields(cls)]


# each field through every command (in the development loop through one, the commands taking turns)
FIELD_CASES = [(command, cls, f) for cls, f in FIELDS for command in COMMANDS]


@pytest.mark.parametrize(
    ("command", "cls", "field"),
    covering(FIELD_CASES, 0, lambda c: (c[1], c[2].name), ids=lambda c: f"{c[1].__name__}.{c[2].name}-{c[0]}"),
)
def test_every_field_lands_in_the_config(command: str, cls: type[Config], field: dataclasses.Field[Any]) -> None:
    argv, expected = sample(cls, field)
    train, data = resolve(command, argv)
    assert getattr(train if cls is TrainConfig else data, field.name) == expected, (command, argv)


@pytest.mark.parametrize("command", COMMANDS)
def test_key_value_pairs_and_tokenizer_vocab(command: str) -> None:
    train, data = resolve(command, ["--train", "eps=1e-7", "--data", "val_fraction=0.2", "--tokenizer", "bpe:512"])
    assert train.eps == 1e-7 and data.val_fraction == 0.2
    assert (data.tokenizer, data.bpe_vocab) == ("bpe", 512)


@pytest.mark.parametrize("command", COMMANDS)
def test_steps_sets_only_the_step_count(command: str) -> None:
    base, _ = resolve(command, [])
    train, _ = resolve(command, ["--steps", "7"])
    assert train.steps == 7
    assert (train.warmup_steps, train.eval_interval) == (base.warmup_steps, base.eval_interval)


def test_every_field_has_help_and_shows_its_default() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command in COMMANDS:
        text = " ".join(sub.choices[command].format_help().split())
        for cls, field in FIELDS:
            assert field.metadata.get("help"), f"{cls.__name__}.{field.name} has no help"
            flag = "--" + field.name.replace("_", "-")
            assert flag in text, (command, flag)
        steps_help = "--steps STEPS optimizer steps; warmup and eval interval keep their own values"
        shown = {
            "verify": "the search's, or derived from --tokens-per-param",
            "search": "derived from --tokens-per-param 5",
        }
        assert f"{steps_help} (default: {shown.get(command, '300')})" in text


def test_search_and_study_default_to_the_screening_trial() -> None:
    """`tlmsearch search` / `study` with no trial flags train 5 tokens per parameter under a
    warmup-stable-decay rate and score the whole validation split; `--steps` replaces the length
    and keeps the rest; `train` keeps TrainConfig's plain defaults."""
    from tlmsearch.cli.study import build_config as study_config
    from tlmsearch.core.base import ALL_WINDOWS

    def study(argv: list[str]) -> TrainConfig:
        cfg = study_config(build_parser().parse_args(["study", "--preset", "tiny", *argv]))
        text = " ".join(build_parser()._subparsers._group_actions[0].choices["study"].format_help().split())
        assert "(default: derived from --tokens-per-param 5)" in text
        return cfg.search.train

    for resolved in (lambda argv: resolve("search", argv)[0], study):
        train = resolved([])
        assert (train.tokens_per_param, train.schedule, train.final_eval_windows) == (5.0, "wsd", ALL_WINDOWS)
        train = resolved(["--steps", "40"])
        assert (train.steps, train.tokens_per_param, train.schedule) == (40, 0.0, "wsd")
    train, _ = resolve("train", [])
    assert (train.steps, train.tokens_per_param, train.schedule) == (300, 0.0, "cosine")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--schedule", "linear"], "invalid choice: 'linear'"),
        (["--steps", "many"], "invalid int value: 'many'"),
        (["--train", "nosuch=1"], "unknown field(s) nosuch"),
    ],
)
def test_bad_values_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from tlmsearch.cli import main

    for command in ("train", "search"):
        try:
            code = main([command, "--preset", "tiny", "--dry-run" if command == "search" else "--json", *argv])
        except SystemExit as exc:  # argparse's own errors
            code = int(exc.code or 0)
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and message in err, err


# the rest have their own form: shared model/training flags, LOW HIGH, a,b, repeatable
SEARCH_FIELDS = [f for f in dataclasses.fields(SearchConfig) if f.metadata.get("help") and f.name not in _NOT_DERIVED]


@pytest.mark.parametrize("field", SEARCH_FIELDS, ids=[f.name for f in SEARCH_FIELDS])
def test_search_flags_are_derived_from_search_config(field: dataclasses.Field[Any]) -> None:
    """Each SearchConfig field with help has a flag of `search` that lands in the config."""
    from tlmsearch.cli.search import build_config

    argv, expected = sample(SearchConfig, field)
    if field.name == "time_budget_s":
        argv[0] = "--time-budget"  # the one renamed flag
    cfg = build_config(build_parser().parse_args(["search", "--preset", "tiny", *argv]))
    assert getattr(cfg, field.name) == expected, argv


def test_help_path_imports_only_the_bottom_layer() -> None:
    """`tlmsearch --help` builds every parser from the configs alone: no run-directory readers,
    analysis, report or training code, and none of torch/numpy/scipy/yaml (each costs time at every
    call). The models' pure counting half (the package's lazy `__init__`, `counts`, each
    architecture's `*_spec`) is light and may load: the cost flags price shapes with it."""
    import subprocess
    import sys

    code = (
        "import sys, tlmsearch.cli\n"
        "tlmsearch.cli.build_parser()\n"
        "roots = ('tlmsearch', 'numpy', 'scipy', 'yaml', 'torch')\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in roots)))\n"
    )
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    counting = {"tlmsearch.models", "tlmsearch.models.counts"}
    # the formats table (`export --format`'s choices) and the writers its rows hold
    counting |= {"tlmsearch.export", "tlmsearch.export.formats", "tlmsearch.export.writer", "tlmsearch.export.foreign"}
    above = {
        m
        for m in loaded
        if m.split(".")[1:2]
        and m.split(".")[1]
        in ("analysis", "rundir", "report", "plots", "export", "tuning", "api", "training", "data", "models")
        and m not in counting
        and not m.endswith("_spec")
    }
    assert above == set() and not {"numpy", "scipy", "yaml", "torch"} & loaded, sorted(loaded)
