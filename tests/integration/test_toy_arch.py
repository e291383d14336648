"""A fifth architecture added from outside the package (`tests/integration/toy_arch.py`): registered with
one registry line it validates, counts, builds and trains like the four families; named by its
import path it runs a real search on Ray, whose trial workers find it by importing its module."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import ARCHITECTURE_NAMES, DataConfig, ModelConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models import ARCHITECTURES, build_model, count_params, flops_per_token, mlp_hidden_sizes

ROOT = Path(__file__).resolve().parents[2]  # the repository root
TOY = "tests.integration.toy_arch:SPEC"


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """`tests.integration.toy_arch` importable here and in any Ray worker started from here (Ray also puts
    the driver's working directory on its workers' path)."""
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))))
    torch.set_num_threads(1)


@pytest.mark.slow
def test_one_registry_line_makes_a_family(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit.models.test_flops import counted_flops_per_token

    monkeypatch.setitem(ARCHITECTURES, "toy", TOY)
    assert "toy" in ARCHITECTURE_NAMES and "toy" in list(ARCHITECTURE_NAMES)  # config validation, CLI help
    tiny = preset("tiny")
    for widths in ((96, 32), (64, 64)):
        cfg = tiny.model_config("toy", widths)
        model = build_model(cfg, seed=0)
        assert count_params(cfg).total == sum(p.numel() for p in model.parameters())
        assert mlp_hidden_sizes(model) == widths
        assert flops_per_token(cfg) == pytest.approx(counted_flops_per_token(cfg), rel=1e-9)
    with pytest.raises(ConfigError, match="seq_len"):  # the family's own validate hook runs
        tiny.model_config("toy", seq_len=1)
    with pytest.raises(ConfigError, match="choose one of: transformer"):
        ModelConfig(arch="tooy", d_model=32, n_layers=2, n_heads=2, mlp_widths=(64, 64), seq_len=32)


def test_unregistered_names_and_bad_paths_are_config_errors() -> None:
    assert "toy" not in ARCHITECTURE_NAMES and TOY in ARCHITECTURE_NAMES
    for bad in ("tests.integration.toy_arch:NOPE", "tests.no_such_module:SPEC", "tests.integration.toy_arch:ToyLM"):
        assert bad not in ARCHITECTURE_NAMES
        with pytest.raises(ConfigError, match="toy_arch|no_such_module"):
            preset("tiny").model_config(bad)


@pytest.mark.slow
def test_a_fresh_process_finds_the_toy_from_a_saved_search_config(tmp_path: Path) -> None:
    """What a Ray trial worker does, without Ray: a new interpreter that registered nothing
    reads the saved search config (its `arch` is the import path) and counts the model."""
    import subprocess
    import sys

    from tlmsearch.tuning import SearchConfig

    cfg = SearchConfig(name="toy", arch=TOY, preset="tiny")
    saved = cfg.save(tmp_path / "search.yaml")
    script = (
        "from tlmsearch.tuning import SearchConfig; from tlmsearch.configs.presets import preset; "
        "from tlmsearch.models import count_params; "
        f"c = SearchConfig.load({str(saved)!r}); "
        "print(c.arch, count_params(preset(c.preset).model_config(c.arch)).total)"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    expected = count_params(preset("tiny").model_config(TOY)).total
    assert out.stdout.split() == [TOY, str(expected)]


@pytest.fixture
def ray_session() -> Iterator[None]:
    import ray

    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 1024**2, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_a_search_runs_on_the_toy_family(tmp_path: Path, ray_session: None) -> None:
    from tlmsearch.tuning import SearchConfig, search

    cfg = SearchConfig(
        name="toy", runs_dir=str(tmp_path), arch=TOY, preset="tiny", trials=3, sampler="random", scheduler="none",
        noise_seeds=0, baselines=("uniform", "cosine:start=1.5,end=0.5"),
        train=TrainConfig(steps=10, eval_interval=5, warmup_steps=2, batch_size=4, eval_windows=4),
        data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    study = search(cfg, progress=False)
    assert SearchConfig.load(tmp_path / "toy" / "search.yaml").arch == TOY
    assert len(study.records) == 3
    expected = count_params(preset("tiny").model_config(TOY)).total
    for record in study.records:
        assert record.status == "complete", record
        assert record.metrics["params_total"] == expected
        assert record.metrics["val_loss"] < 6.0  # trained a little from ln(256) = 5.5 at most
