"""Hostile values given to the configs through the Python API: each is one clear `ConfigError`
naming the field (the message a file with the same value gets), never an AttributeError or a
TypeError from deep inside, and never a config that the tool later refuses to read back."""

from __future__ import annotations

from typing import Any

import pytest

from tlmsearch.configs.presets import preset
from tlmsearch.configs.run import ModelSpec, RunConfig
from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models.gated_attention_spec import GatedAttentionOptions
from tlmsearch.models.titans_spec import TitansOptions

TINY: dict[str, Any] = dict(arch="transformer", d_model=32, n_layers=2, n_heads=2, mlp_widths=(64, 64), seq_len=32)


# ----------------------------------------------------------------------------- finding 1: options


@pytest.mark.parametrize(
    ("arch", "options", "message"),
    [
        ("transformer", 5, r"options: expected a mapping"),
        ("titans", None, r"options: expected a mapping"),
        ("gated_attention", "gate", r"options: expected a mapping"),
        ("gated_attention", {"gate": "x"}, r"options.gate='x' is not allowed; choose one of: elementwise, headwise"),
        (
            "gated_attention",
            {"nosuch": 1},
            r"options: nosuch is not an option of arch='gated_attention'; its options: gate$",
        ),
        ("titans", {"mem_chunk": "x"}, r"options.mem_chunk: expected an integer, got 'x'"),
        ("titans", {"mem_normalized_update": "maybe"}, r"options.mem_normalized_update: expected true or false"),
        ("hope_attention", {"cms_periods": None}, r"options.cms_periods: expected a list"),
    ],
)
def test_model_options_not_a_valid_mapping_is_refused(arch: str, options: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ModelConfig(**{**TINY, "arch": arch}, options=options)
    if options is not None:  # model_config(options=None): no options given, the defaults
        with pytest.raises(ConfigError, match=message):
            preset("tiny").model_config(arch, options=options)


def test_model_options_as_a_mapping_is_the_same_config() -> None:
    gated = {**TINY, "arch": "gated_attention"}
    given = ModelConfig(**gated, options={"gate": "headwise"})
    assert given == ModelConfig(**gated, options=GatedAttentionOptions(gate="headwise"))
    assert ModelConfig.from_dict(given.to_dict()) == given


def test_arch_options_field_types() -> None:
    with pytest.raises(ConfigError, match=r"options.window: expected an integer"):
        TitansOptions(window="auto")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"options.gate: expected a string"):
        GatedAttentionOptions(gate=1)  # type: ignore[arg-type]


def test_model_spec_options_checked_when_the_spec_is_made() -> None:
    with pytest.raises(ConfigError, match=r"model.options: expected a mapping, got int"):
        ModelSpec(preset="tiny", overrides={"options": 5})
    with pytest.raises(ConfigError, match=r"model.options.gate='x' is not allowed|options.gate='x' is not allowed"):
        ModelSpec(preset="tiny", arch="gated_attention", overrides={"options": {"gate": "x"}})
    with pytest.raises(ConfigError, match=r"model.options: gate \(an option of gated_attention\) is not an option"):
        ModelSpec(preset="tiny", arch="transformer", overrides={"options": {"gate": "headwise"}})
    spec = ModelSpec(preset="tiny", arch="gated_attention", overrides={"options": {"gate": "headwise"}})
    assert GatedAttentionOptions.of(spec.resolve()[0]).gate == "headwise"
    assert ModelSpec.from_dict(spec.to_dict()) == spec


# ----------------------------------------------------------------------------- finding 3: search widths


def test_search_model_mlp_widths_refused_with_the_way_to_train_given_widths() -> None:
    with pytest.raises(ConfigError, match=r"model.mlp_widths .*the search chooses the widths.*tlmsearch train"):
        SearchConfig(preset="tiny", model={"mlp_widths": [64, 64]})
    with pytest.raises(ConfigError, match=r"the search chooses the widths"):
        SearchConfig.from_yaml("trials: 2\npreset: tiny\nmodel: {mlp_widths: [64, 64]}\n")


@pytest.mark.parametrize(("key", "flag"), [("arch", "--arch"), ("preset", "--preset"), ("family", "--space")])
def test_search_model_refuses_search_settings_naming_the_setting(key: str, flag: str) -> None:
    with pytest.raises(ConfigError, match=f"model.{key} .*{flag}"):
        SearchConfig(preset="tiny", model={key: "x"})


# ----------------------------------------------------------------------------- finding 4: SearchConfig fields


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"trials": 2.5}, r"trials: expected an integer, got 2.5"),
        ({"trials": True}, r"trials: expected an integer, got True"),
        ({"seed": False}, r"seed: expected an integer"),
        ({"model": 5}, r"model: expected a mapping"),
        ({"model": {"nosuch": 1}}, r"model: unknown ModelConfig field\(s\) nosuch; allowed: .*n_layers"),
        ({"model": {"options": 5}}, r"model.options: expected a mapping"),
        ({"model": {"n_layers": "x"}}, r"model.n_layers: expected an integer, got 'x'"),
        ({"model": {"n_layers": True}}, r"model.n_layers: expected an integer, got True"),
        ({"data": "pydoc"}, r"data: expected a mapping"),
        ({"space": None}, r"space: expected a string"),
        ({"space": 5}, r"space: expected a string"),
        ({"preset": "nosuch"}, r"preset='nosuch' is unknown; choose one of: tiny"),
        ({"preset": None}, r"preset: expected a string"),
        ({"name": None}, r"name: expected a string"),
        ({"runs_dir": None}, r"runs_dir: expected a string"),
        ({"storage": 5}, r"storage: expected a string"),
        ({"train": 5}, r"train: expected a mapping"),
        ({"train": {"steps": "x"}}, r"train.steps: expected an integer"),
        ({"train": {"nosuch": 1}}, r"train: unknown field\(s\) nosuch"),
        ({"objectives": "val_loss"}, r"objectives: expected a list"),
        ({"baselines": None}, r"baselines: expected a list"),
        ({"cpus_per_trial": "1"}, r"cpus_per_trial: expected a number"),
    ],
)
def test_search_config_field_types(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SearchConfig(**{"preset": "tiny", **kwargs})


def test_search_config_api_message_is_the_file_message() -> None:
    with pytest.raises(ConfigError) as api:
        SearchConfig(trials=2.5)  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as file:
        SearchConfig.from_yaml("trials: 2.5\n")
    assert str(api.value) == str(file.value)


def test_search_config_valid_api_forms_still_work() -> None:
    cfg = SearchConfig(preset="tiny", train={"steps": 3}, data={"corpus": "pydoc"}, cpus_per_trial=1)  # type: ignore[arg-type]
    assert cfg.train == TrainConfig(steps=3) and cfg.data == DataConfig(corpus="pydoc")
    assert cfg.cpus_per_trial == 1.0
    assert SearchConfig.from_dict(cfg.to_dict()) == cfg
    model = {"n_layers": 4, "options": {"gate": "headwise"}}
    cfg = SearchConfig(preset="tiny", arch="gated_attention", model=model, trials=2)
    assert cfg.model == {"n_layers": 4, "options": {"gate": "headwise"}}
    assert SearchConfig.from_yaml(cfg.to_yaml()) == cfg


def test_search_config_refuses_an_option_of_another_architecture() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^model.options: gate \(an option of gated_attention\) is not an option of "
        r"arch='titans'; its options: titans_variant, n_persistent",
    ):
        SearchConfig(preset="tiny", arch="titans", model={"options": {"gate": "headwise"}})


# ----------------------------------------------------------------------------- finding 5: bools


@pytest.mark.parametrize("value", ["maybe", "no", 1, 0, None])
def test_bool_fields_take_only_booleans(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"tie_embeddings: expected true or false"):
        ModelConfig(**TINY, tie_embeddings=value)
    with pytest.raises(ConfigError, match=r"compile: expected true or false"):
        TrainConfig(compile=value)
    with pytest.raises(ConfigError, match=r"model.tie_embeddings: expected true or false"):
        SearchConfig(preset="tiny", model={"tie_embeddings": value})
    with pytest.raises(ConfigError, match=r"model.tie_embeddings: expected true or false"):
        ModelSpec(preset="tiny", overrides={"tie_embeddings": value})


def test_bool_overrides_round_trip() -> None:
    spec = ModelSpec(preset="tiny", overrides={"tie_embeddings": False})
    run = RunConfig(model=spec)
    assert RunConfig.from_yaml(run.to_yaml()) == run
    assert spec.resolve()[0].tie_embeddings is False


# ----------------------------------------------------------------------------- other fields


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: TrainConfig(betas=None), r"betas: expected a list"),
        (lambda: TrainConfig(betas=(0.9,)), r"betas: expected 2 items"),
        (lambda: TrainConfig(betas=("a", "b")), r"betas\[0\]: expected a number"),
        (lambda: TrainConfig(lr="0.1"), r"lr: expected a number"),
        (lambda: TrainConfig(steps=10**400), r"steps=.* must be a positive integer"),
        (lambda: TrainConfig(lr=10**400), r"lr: expected a finite number"),
        (lambda: DataConfig(corpus=5), r"corpus: expected a string, got 5"),
        (lambda: DataConfig(bpe_vocab="x"), r"bpe_vocab: expected an integer, got 'x'"),
        (lambda: DataConfig(cache_dir=None), r"cache_dir: expected a string, got None"),
        (lambda: DataConfig(val_fraction=None), r"val_fraction: expected a number"),
        (lambda: ModelSpec(preset=None), r"model.preset: expected a string"),
        (lambda: ModelSpec(base_width="x"), r"model.base_width: expected an integer"),
        (lambda: ModelSpec(overrides=5), r"model.overrides: expected a mapping"),
        (lambda: RunConfig(train=5), r"train: expected a mapping"),
        (lambda: RunConfig(meta=5), r"meta: expected a mapping"),
    ],
)
def test_other_fields_refused_clearly(make: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make()


def test_lists_become_tuples() -> None:
    cfg = ModelConfig(**{**TINY, "mlp_widths": [64, 64]})
    assert cfg.mlp_widths == (64, 64) and isinstance(cfg.mlp_widths, tuple)
    assert TrainConfig(betas=[0.9, 0.99]).betas == (0.9, 0.99)
    hash(cfg)
