"""Exports load where they claim: transformers follows the openelm / nemotron-nas `auto_map` to
the reference code's repository; an inexact format is refused unless asked, showing both widths.

The reference configuration classes are remote code (not installable here, no network), so the
loading test stands in for the one call that would fetch them and checks everything around it:
that transformers takes the `auto_map` route (without it: "not recognized"), which repository
and class it asks for, and that the config it builds carries the exported widths.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from analysis_fakes import search_records, verify_records, write_run

from tlmsearch.cli import main
from tlmsearch.core.base import ModelConfig
from tlmsearch.export.foreign import NEMOTRON_CODE, OPENELM_CODE
from tlmsearch.export.formats import FORMATS
from tlmsearch.export.schedule import decode, export

WIDTHS = {"openelm": (96, 80, 64, 48, 32), "nemotron-nas": (2816, 2560, 1536, 768, 512)}
REFERENCE = {
    "openelm": (OPENELM_CODE, "configuration_openelm.OpenELMConfig"),
    "nemotron-nas": (NEMOTRON_CODE, "configuration_decilm.DeciLMConfig"),
}


def _model(widths: tuple[int, ...]) -> ModelConfig:
    d = 64 if max(widths) < 256 else 1024
    return ModelConfig(arch="transformer", d_model=d, n_layers=len(widths), n_heads=4, mlp_widths=widths, seq_len=32)


@pytest.mark.parametrize("fmt", ["openelm", "nemotron-nas"])
def test_autoconfig_follows_the_auto_map_to_the_reference_code(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transformers = pytest.importorskip("transformers")
    from transformers.models.auto import configuration_auto

    asked: list[str] = []

    class StandIn(transformers.PretrainedConfig):  # type: ignore[misc]
        model_type = fmt

        def __init__(self, **kwargs: Any) -> None:  # as DeciLMConfig: it sets its RoPE fields itself, then init
            for name in ("max_position_embeddings", "rope_theta", "rope_scaling"):
                if name in kwargs:
                    setattr(self, name, kwargs.pop(name))
            super().__init__(**kwargs)

    def fetch(class_ref: str, repo_or_dir: str, **kwargs: Any) -> type:
        asked.append(class_ref)
        return StandIn

    ex = export(_model(WIDTHS[fmt]), fmt)
    assert ex.exact
    ex.write(tmp_path)
    bare = json.loads(ex.text)
    del bare["auto_map"]
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "config.json").write_text(json.dumps(bare))
    with pytest.raises(ValueError, match="not recognized|does not recognize|Unrecognized"):  # the old file
        transformers.AutoConfig.from_pretrained(str(tmp_path / "bare"), trust_remote_code=True)
    monkeypatch.setattr(configuration_auto, "get_class_from_dynamic_module", fetch)
    config = transformers.AutoConfig.from_pretrained(str(tmp_path), trust_remote_code=True)
    repo, cls = REFERENCE[fmt]
    assert asked == [f"{repo}--{cls}"]
    assert decode(fmt, config.to_dict()) == WIDTHS[fmt]
    assert "trust_remote_code=True" in FORMATS[fmt].loading and repo in FORMATS[fmt].checked


def test_inexact_export_is_refused_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", search_records() + verify_records())
    assert main(["export", str(run), "--format", "nemotron-nas", "--out", str(tmp_path / "n")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot express" in err and "its reader builds [" in err
    assert "--allow-inexact" in err and not (tmp_path / "n").exists()
    out_dir = tmp_path / "n"
    assert main(["export", str(run), "--format", "nemotron-nas", "--out", str(out_dir), "--allow-inexact"]) == 0
    out = capsys.readouterr().out
    assert "NOT exact" in out and "reader builds:" in out
    assert f"AutoConfig.from_pretrained({str(out_dir)!r}, trust_remote_code=True)" in out
    assert "\ntested: transformers reads the file's auto_map" in out and "checked: tested" not in out
    assert main(["export", str(run), "--format", "openelm", "--out", str(tmp_path / "o")]) == 0  # exact: no flag
    assert "load it with:" in capsys.readouterr().out
