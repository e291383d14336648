"""bench_scan_compile times the function the model runs: its chunk-body form of Titans' memory
scan equals `titans.memory_scan` (eager, float64, no compilation here)."""

from __future__ import annotations

import pytest
import torch
from scan_inputs import titans_scan_inputs

from bench.bench_scan_compile import chunk_body, scan_with_body
from tlmsearch.models.titans import memory_scan


@pytest.mark.parametrize("max_norm", [1.5, 2.0])
def test_chunk_body_scan_equals_the_memory_scan(max_norm: float) -> None:
    torch.manual_seed(0)
    chunk = 4
    inputs = titans_scan_inputs(16, theta_scale=0.3, unit_values=True)
    ref, ref_norms = memory_scan(*inputs, chunk, max_norm, True)
    got, norms = scan_with_body(inputs, chunk, max_norm, chunk_body)
    assert ref_norms is not None and 0 < (ref_norms > max_norm).sum() < ref_norms.numel()  # the clip matters
    torch.testing.assert_close(got, ref, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(norms, ref_norms, atol=1e-12, rtol=1e-12)
    w = torch.randn_like(ref)
    for a, b_ in zip(
        torch.autograd.grad((got * w).sum(), inputs), torch.autograd.grad((ref * w).sum(), inputs), strict=True
    ):
        torch.testing.assert_close(a, b_, atol=1e-10, rtol=1e-10)
