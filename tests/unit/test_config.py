"""Config round trips and validation messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlmsearch.core.base import ModelConfig
from tlmsearch.errors import ConfigError


def model(**kw: object) -> ModelConfig:
    base: dict[str, object] = dict(
        arch="titans", d_model=32, n_layers=3, n_heads=4, mlp_widths=(96, 64, 32), seq_len=16
    )
    base.update(kw)
    return ModelConfig(**base)  # type: ignore[arg-type]


def test_round_trips(tmp_path: Path) -> None:
    cfg = model(options={"titans_variant": "mal", "mem_chunk": 8})
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    assert ModelConfig.from_json(cfg.to_json()) == cfg
    assert ModelConfig.from_yaml(cfg.to_yaml()) == cfg
    for name in ("m.json", "m.yaml"):
        assert ModelConfig.load(cfg.save(tmp_path / name)) == cfg
    assert isinstance(ModelConfig.from_dict(cfg.to_dict()).mlp_widths, tuple)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"arch": "rnn"}, "arch='rnn' is not allowed; choose one of: transformer, gated_attention"),
        ({"mlp_widths": (1, 2)}, "mlp_widths has 2 entries"),
        ({"n_heads": 5}, "not divisible by n_heads=5"),
        ({"n_layers": 0, "mlp_widths": ()}, "n_layers=0 must be a positive integer"),
    ],
)
def test_validation_names_the_field(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        model(**change)


def test_from_dict_rejects_unknown_and_mistyped_fields() -> None:
    data = model().to_dict()
    with pytest.raises(ConfigError, match="unknown field.*d_modle"):
        ModelConfig.from_dict({**data, "d_modle": 4})
    with pytest.raises(ConfigError, match="d_model: expected an integer"):
        ModelConfig.from_dict({**data, "d_model": "big"})
    with pytest.raises(ConfigError, match="options: gates is not an option of arch='titans'; its options: titans_"):
        ModelConfig.from_dict({**data, "options": {"gates": 1}})
