"""Presets: every preset works with every family (analytic counts for all, builds for the
small ones), budgets round-trip through the profiles, bad names are one-line errors."""

from __future__ import annotations

import pytest

from tlmsearch.configs.presets import PRESETS, Preset, preset
from tlmsearch.core.base import ARCHITECTURE_NAMES
from tlmsearch.errors import ConfigError
from tlmsearch.models.counts import count_params, flops_per_token
from tlmsearch.models.titans_spec import TitansOptions


def test_preset_names_and_lookup() -> None:
    assert {"tiny", "cpu-s", "cpu-m", "170m", "340m", "760m", "1.3b"} <= set(PRESETS)
    assert preset("cpu-s") is PRESETS["cpu-s"]
    with pytest.raises(ConfigError, match="cpu-s") as info:
        preset("huge")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_round_trips_and_budget(name: str) -> None:
    p = preset(name)
    assert Preset.from_dict(p.to_dict()) == p
    assert p.base_width % p.multiple_of == 0
    assert p.d_model % p.n_heads == 0 and (p.d_model // p.n_heads) % 2 == 0
    budget = p.budget()
    assert budget.total == p.n_layers * p.base_width
    assert p.budget(base_width=2 * p.base_width).total == 2 * budget.total


@pytest.mark.parametrize("name", list(PRESETS))
@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_every_preset_works_with_every_family(name: str, arch: str) -> None:
    from tlmsearch.profiles import profile

    p = preset(name)
    widths = profile("cosine", p.budget(), start=1.5, end=0.5)
    assert sum(widths) == p.n_layers * p.base_width and widths[0] > widths[-1]
    uniform, tapered = p.model_config(arch), p.model_config(arch, widths)
    assert count_params(uniform).total == count_params(tapered).total
    assert flops_per_token(uniform) == flops_per_token(tapered) > 0
    if name in ("tiny", "cpu-s"):  # build the small ones for real
        from tlmsearch.models import build_model, mlp_hidden_sizes

        model = build_model(tapered)
        assert count_params(tapered).total == sum(q.numel() for q in model.parameters())
        assert mlp_hidden_sizes(model) == widths


def test_model_config_overrides() -> None:
    p = preset("cpu-s")
    cfg = p.model_config("titans", vocab_size=1024, options={"titans_variant": "mal"})
    assert cfg.vocab_size == 1024 and cfg.options == TitansOptions(titans_variant="mal")
    assert cfg.mlp_widths == (p.base_width,) * p.n_layers
    with pytest.raises(ConfigError, match="colour"):
        p.model_config("transformer", colour="red")
    with pytest.raises(ConfigError, match="mlp_widths"):
        p.model_config("transformer", (1, 2))


def test_presets_and_counts_do_not_import_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from tlmsearch.configs.presets import preset; "
        "from tlmsearch.models import count_params, flops_per_token; "
        "c = preset('340m').model_config('titans'); count_params(c); flops_per_token(c); "
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
