"""Sizes checked before they are allocated (issue 31): a shape beyond the bounds every config
shares is refused before any tuple of widths or tensor is built, and timing models that cannot fit
in memory is refused with the estimate and the memory there is, before building any of them."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tlmsearch.cli import main
from tlmsearch.configs.presets import preset
from tlmsearch.core.base import MODEL_INT_BOUNDS
from tlmsearch.core.validate import MAX_LAYERS, estimate_timing_bytes, estimate_training_bytes
from tlmsearch.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def _limited(limit_bytes: int) -> None:  # in the child: a runaway allocation fails at once
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["plan", "--layers", "1000000000"], ["n_layers=1000000000", f"at most {MAX_LAYERS}"]),
        (["plan", "--preset", "1.3b", "--layers", "100000000"], ["n_layers", f"at most {MAX_LAYERS}"]),
        (["plan", "--base-width", "1000000000000"], ["base_width"]),
        (["plan", "--vocab", "1000000000000"], ["vocab_size"]),
    ],
)
@pytest.mark.slow
def test_plan_refuses_a_shape_out_of_bounds_before_building_its_widths(argv: list[str], words: list[str]) -> None:
    # a child process with 2 GiB of address space: `(w,) * 1e9` (8 GB) ends in MemoryError there
    done = subprocess.run(
        [sys.executable, "-m", "tlmsearch", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        preexec_fn=lambda: _limited(2 * 2**30),
    )
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    for word in words:
        assert word in lines[0], lines[0]


def test_a_preset_shape_takes_the_model_bounds() -> None:
    for field, high in MODEL_INT_BOUNDS.items():
        with pytest.raises(ConfigError, match=f"{field}={high + 1} must be a positive integer, at most"):
            preset("tiny").replace(**{field: high + 1})


# ----------------------------------------------------------------------------- profiles --throughput


@pytest.fixture
def nothing_built(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was built before the memory check")

    monkeypatch.setattr("tlmsearch.models.build_model", refuse)  # imported when used, or at the top:
    monkeypatch.setattr("tlmsearch.costs.throughput.build_model", refuse, raising=False)


@pytest.mark.parametrize("batch", ["4096", "64"])
def test_profiles_throughput_refuses_models_that_cannot_fit_before_building_them(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, nothing_built: None, batch: str
) -> None:
    machine = lambda: 16 * 2**30  # noqa: E731 - a 16 GiB machine
    monkeypatch.setattr("tlmsearch.core.validate.available_memory_bytes", machine)
    monkeypatch.setattr("tlmsearch.costs.throughput.available_memory_bytes", machine, raising=False)
    code = main(["profiles", "--preset", "1.3b", "--throughput", "--batch-size", batch, "--repeats", "1"])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"timing 3 models at batch size {batch} on cpu needs about" in lines[0]
    assert "but only 16.0 GiB is available" in lines[0]
    assert "--batch-size" in lines[0]


def test_the_timing_estimate_counts_every_model_built_and_one_step() -> None:
    tiny = preset("tiny").model_config("transformer")
    one = estimate_timing_bytes([tiny], 4)
    assert estimate_timing_bytes([tiny, tiny, tiny], 4) > one
    assert estimate_timing_bytes([tiny], 8) > one
    assert one < estimate_training_bytes(tiny, 4, tiny.seq_len)  # no optimizer state when timing
    assert estimate_timing_bytes([], 4) == 0
