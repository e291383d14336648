"""RunConfig: the run-config file of `tlmsearch train --config` and of the native export."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlmsearch.configs.presets import preset
from tlmsearch.configs.run import ModelSpec, RunConfig
from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec


def full() -> RunConfig:
    model = preset("tiny").model_config("titans", (96, 32), options={"mem_chunk": 8})
    return RunConfig(
        model=model, train=TrainConfig(steps=6, betas=(0.8, 0.9)), data=DataConfig(corpus="pydoc"), meta={"a": [1]}
    )


def by_spec() -> RunConfig:
    spec = ModelSpec(preset="tiny", arch="gated_attention", family="linear", base_width=48, overrides={"seq_len": 16})
    return RunConfig(model=spec, train=TrainConfig(seed=3))


@pytest.mark.parametrize("make", [full, by_spec, RunConfig])
def test_round_trips(make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg = make()
    assert RunConfig.from_dict(cfg.to_dict()) == cfg
    assert RunConfig.from_json(cfg.to_json()) == cfg and RunConfig.from_yaml(cfg.to_yaml()) == cfg
    for name in ("run.yaml", "run.json"):
        assert RunConfig.load(cfg.save(tmp_path / name)) == cfg


def test_spec_is_flat_in_the_file_and_resolves_on_budget() -> None:
    cfg = by_spec()
    assert cfg.to_dict()["model"] == {
        "preset": "tiny", "arch": "gated_attention", "family": "linear", "base_width": 48, "seq_len": 16,
    }  # fmt: skip
    model, meta = cfg.resolved()
    budget = preset("tiny").budget(48)
    assert model.mlp_widths == ProfileSpec.parse("linear").widths(budget) and sum(model.mlp_widths) == 2 * 48
    assert model.seq_len == 16 and model.arch == "gated_attention"
    assert meta == {"preset": "tiny", "arch": "gated_attention", "family": "linear", "base_width": 48}


def test_shape_overrides_apply_to_the_preset_before_the_budget() -> None:
    model, _ = ModelSpec(preset="tiny", family="cosine", overrides={"n_layers": 4}).resolve()
    assert model.n_layers == 4 and sum(model.mlp_widths) == 4 * preset("tiny").base_width


def test_full_model_is_kept_exactly() -> None:
    cfg = full()
    model, meta = cfg.resolved()
    assert model == cfg.model and meta == {"a": [1]} and isinstance(model, ModelConfig)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"modle": {}}, r"unknown section\(s\) modle; allowed: model, train, data, meta"),
        ({"train": {"stpes": 3}}, r"train: unknown field\(s\) stpes"),
        ({"model": {"preset": "tiny", "widht": 3}}, r"model: unknown field\(s\) widht"),
        ({"model": {"arch": "rnn"}}, "model.arch='rnn' is not allowed"),
        ({"model": {"family": "zigzag"}}, "unknown profile family"),
        ({"train": [1, 2]}, "section 'train' must be a mapping"),
        ({"model": {**full().model.to_dict(), "d_modle": 3}}, r"model: unknown field\(s\) d_modle"),
    ],
)
def test_bad_documents_name_what_is_wrong(doc: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RunConfig.from_dict(doc)


def test_empty_sections_and_bad_files(tmp_path: Path) -> None:
    assert RunConfig.from_yaml("model:\ntrain:\n") == RunConfig()
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: invalid YAML at line 2") as info:
        RunConfig.load(bad)
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="config file: .*missing.yaml does not exist"):
        RunConfig.load(tmp_path / "missing.yaml")


def test_native_export_is_the_same_document() -> None:
    from tlmsearch.export.schedule import export

    cfg = full()
    ex = export(cfg.model, "native", train=cfg.train.to_dict(), data=cfg.data.to_dict(), source=cfg.meta)
    assert RunConfig.from_yaml(ex.text) == cfg
