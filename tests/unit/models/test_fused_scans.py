"""The fused scans (one autograd node, hand-written backward: titans_fused.py, hope_fused.py)
equal the autograd forms of `memory_scan` and `fast_swiglu_scan` in float64: the reads, the
clip statistics and the gradient of every input, with and without the normalised step and
the clip, over whole and padded last chunks. The autograd forms are themselves checked
against token-by-token references in test_models.py."""

from __future__ import annotations

import pytest
import torch
from scan_inputs import titans_scan_inputs

from tlmsearch.models.hope_attention import fast_swiglu_scan
from tlmsearch.models.titans import memory_scan

DT = torch.float64
# (T, clip norm, normalised step): clip thresholds that clip some tokens but not all
TITANS_CASES = [(16, 0.0, False), (13, 2.0, False), (13, 2.0, True), (16, 0.0, True), (29, 1.0, True)]
HOPE_CASES = [(16, 0.0, False), (13, 50.0, False), (13, 0.5, True), (16, 0.0, True), (29, 1.0, True)]


def _has_node(out: torch.Tensor, name: str) -> bool:
    """Whether the autograd graph of `out` holds a node whose type name contains `name`."""
    seen, todo = set(), [out.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if name in type(node).__name__:
            return True
        todo.extend(nxt for nxt, _ in node.next_functions)
    return False


def _close(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a, b, atol=1e-11, rtol=1e-10)


@pytest.mark.parametrize(("t", "max_norm", "normalized"), TITANS_CASES)
def test_fused_titans_scan_equals_the_autograd_form(t: int, max_norm: float, normalized: bool) -> None:
    torch.manual_seed(0)
    chunk = 4
    inputs = titans_scan_inputs(t, theta_scale=0.1, unit_values=False)
    ref, ref_norms = memory_scan(*inputs, chunk, max_norm, normalized, fused=False)
    out, norms = memory_scan(*inputs, chunk, max_norm, normalized, fused=True)
    assert _has_node(out, "MemoryScan") and not _has_node(ref, "MemoryScan")
    _close(out, ref)
    if max_norm > 0:
        assert ref_norms is not None and norms is not None
        _close(norms, ref_norms)
        assert (norms > max_norm).any() and not (norms > max_norm).all()  # the clip's both branches
    else:
        assert norms is None and ref_norms is None
    w = torch.randn_like(ref)
    for g, g_ref in zip(
        torch.autograd.grad((out * w).sum(), inputs), torch.autograd.grad((ref * w).sum(), inputs), strict=True
    ):
        _close(g, g_ref)


@pytest.mark.parametrize(("t", "max_norm", "normalized"), HOPE_CASES)
def test_fused_hope_scan_equals_the_autograd_form(t: int, max_norm: float, normalized: bool) -> None:
    torch.manual_seed(0)
    b, c, f, chunk = 2, 4, 6, 4
    u, k, v = (torch.randn(b, t, c, dtype=DT, requires_grad=True) for _ in range(3))
    wg, wu, wd = (torch.randn(*s, dtype=DT, requires_grad=True) for s in ((c, f), (c, f), (f, c)))
    lr = torch.tensor(0.05, dtype=DT, requires_grad=True)
    inputs = (u, k, v, wg, wu, wd, lr)
    ref, ref_norms = fast_swiglu_scan(*inputs, chunk, max_norm, normalized, fused=False)
    out, norms = fast_swiglu_scan(*inputs, chunk, max_norm, normalized, fused=True)
    assert _has_node(out, "FastSwiGLUScan") and not _has_node(ref, "FastSwiGLUScan")
    _close(out, ref)
    if max_norm > 0:
        assert ref_norms is not None and norms is not None
        _close(norms, ref_norms)
        assert (norms > max_norm).any() and not (norms > max_norm).all()
    else:
        assert norms is None and ref_norms is None
    w = torch.randn_like(ref)
    for g, g_ref in zip(
        torch.autograd.grad((out * w).sum(), inputs), torch.autograd.grad((ref * w).sum(), inputs), strict=True
    ):
        _close(g, g_ref)


def test_bf16_and_autocast_keep_the_autograd_form() -> None:
    b, h, t, d, f = 1, 2, 8, 4, 8
    q, k, v = (torch.randn(b, h, t, d, dtype=torch.bfloat16) for _ in range(3))
    gates = (torch.full((b, h, t), 0.01), torch.full((b, h, t), -0.1), torch.full((b, h, t), -0.01))
    a2, a1 = torch.randn(h, d, f, dtype=torch.bfloat16, requires_grad=True), torch.randn(h, f, d, dtype=torch.bfloat16)
    out, _ = memory_scan(q, k, v, *gates, a2, a1, 4, 1.0, True)
    assert out.grad_fn is not None and not _has_node(out, "MemoryScan")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        a2f = a2.float().detach().requires_grad_()
        out, _ = memory_scan(q.float(), k.float(), v.float(), *gates, a2f, a1.float(), 4, 1.0, True)
    assert out.grad_fn is not None and not _has_node(out, "MemoryScan")
