"""Export formats: each round-trips its widths under the reader's documented rule."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tlmsearch.core.base import ModelConfig
from tlmsearch.errors import UserError
from tlmsearch.export.schedule import FORMATS, decode, export, make_divisible


def _model(widths: list[int], d_model: int = 64) -> ModelConfig:
    return ModelConfig(
        arch="transformer", d_model=d_model, n_layers=len(widths), n_heads=4, mlp_widths=tuple(widths), seq_len=32
    )


WIDTHS = [96, 80, 64, 48, 32]  # a cosine-ish taper, multiples of 16


@pytest.mark.parametrize("fmt", [name for name in FORMATS if name != "nemotron-nas"])  # 256-multiples below
def test_exact_formats_round_trip(fmt: str) -> None:
    ex = export(_model(WIDTHS), fmt, source={"trial_id": "t1"})
    doc = yaml.safe_load(ex.text)  # YAML reads JSON too: every format's file parses back
    assert decode(fmt, doc) == tuple(WIDTHS)
    assert ex.exact and ex.built == tuple(WIDTHS)
    assert "exact" in ex.summary()


def test_format_table_drives_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from tlmsearch.cli import main

    with pytest.raises(SystemExit):
        main(["export", "--help"])
    text = capsys.readouterr().out
    for fmt in FORMATS.values():
        assert fmt.name in text and fmt.description in text and fmt.filename
        assert export(_model(WIDTHS), fmt.name).filename == fmt.filename


def test_nemotron_exact_for_multiples_of_256() -> None:
    widths = [2816, 2560, 1536, 768, 512]
    ex = export(_model(widths, d_model=1024), "nemotron-nas")
    doc = json.loads(ex.text)
    assert len(doc["block_configs"]) == 5
    assert ex.exact and decode("nemotron-nas", doc) == tuple(widths)


def test_nemotron_inexact_says_so_and_lists_built_widths() -> None:
    ex = export(_model(WIDTHS), "nemotron-nas")
    assert not ex.exact
    assert ex.built == (256, 256, 256, 256, 256)  # every width rounds up to a multiple of 256
    text = ex.summary()
    assert "NOT exact" in text and "[256, 256, 256, 256, 256]" in text and "multiple of 256" in text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=12), st.sampled_from([256, 512, 768, 1024, 4096]))
def test_nemotron_round_trip_property(units: list[int], d_model: int) -> None:
    widths = [256 * u for u in units]
    assert export(_model(widths, d_model=d_model), "nemotron-nas").exact


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 5000), min_size=3, max_size=24), st.sampled_from([32, 64, 96, 768, 2048]))
def test_openelm_round_trip_property(widths: list[int], d_model: int) -> None:
    ex = export(_model(widths, d_model=d_model), "openelm")
    assert ex.exact, ex.summary()


def test_openelm_two_layers_and_forced_divisor() -> None:
    # two entries are read as rounded linspace end points: 100/64 = 1.5625 -> 1.56 -> 99.84 -> 100 (gcd 4)
    ex = export(_model([100, 28]), "openelm")
    assert ex.built == decode("openelm", json.loads(ex.text))
    assert any("2-entry" in n for n in ex.notes)
    coarse = export(_model(WIDTHS), "openelm", divisor=64)
    assert not coarse.exact and all(w % 64 == 0 for w in coarse.built)
    assert make_divisible(100.0, 64) == 128 and make_divisible(90.0, 64) == 128


@pytest.mark.slow
def test_gemma3n_export_loads_in_transformers() -> None:
    transformers = pytest.importorskip("transformers")
    ex = export(_model(WIDTHS), "gemma3n")
    cfg = transformers.Gemma3nTextConfig(**{k: v for k, v in json.loads(ex.text).items() if k != "model_type"})
    assert list(cfg.intermediate_size) == WIDTHS
    assert cfg.num_hidden_layers == 5 and cfg.hidden_size == 64


def test_gemma3n_export_from_file(tmp_path) -> None:
    transformers = pytest.importorskip("transformers")
    path = export(_model(WIDTHS), "gemma3n").write(tmp_path)
    cfg = transformers.Gemma3nTextConfig.from_json_file(str(path))
    assert list(cfg.intermediate_size) == WIDTHS


def test_native_is_a_model_config() -> None:
    from tlmsearch.configs.run import RunConfig
    from tlmsearch.core.base import DataConfig, TrainConfig

    ex = export(_model(WIDTHS), "native", train={"steps": 10}, data={"corpus": "pydoc"}, source={"trial_id": "t"})
    doc = yaml.safe_load(ex.text)
    assert ModelConfig.from_dict(doc["model"]) == _model(WIDTHS)
    run = RunConfig.from_dict(doc)  # the whole document is a RunConfig, written in full
    assert run.train == TrainConfig(steps=10) and run.data == DataConfig(corpus="pydoc")
    assert run.meta == {"trial_id": "t"} and RunConfig.from_yaml(run.to_yaml()) == run


def test_unsupported_format_is_a_user_error() -> None:
    with pytest.raises(UserError, match=f"unsupported export format 'onnx'; choose one of: {', '.join(FORMATS)}"):
        export(_model(WIDTHS), "onnx")
