"""Packed-training tests run in float64 (exactness against the trainer alone), on a corpus
cached in the test's folder, with the matmul peak stubbed (measured by its own tests)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch


@pytest.fixture(autouse=True)
def _float64_and_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    for where in ("tlmsearch.training.trainer", "tlmsearch.training.pack.engine"):
        monkeypatch.setattr(f"{where}.matmul_peak", lambda device, dtype, cache_dir=None: 1e11)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)
