"""Random float64 inputs of Titans' memory scan (`titans.memory_scan`), for the tests that
compare its forms (autograd, fused, the benchmark's chunk-body form)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

DT = torch.float64


def titans_scan_inputs(
    t: int, *, theta_scale: float, unit_values: bool, b: int = 2, h: int = 2, d: int = 4, f: int = 8
) -> tuple[torch.Tensor, ...]:
    """(q, k, v, theta, log_eta, log_keep, a2, a1), all requiring grad; keys and queries of unit
    norm, values too when `unit_values`; inner rates in [0, theta_scale)."""
    q, k = (F.normalize(torch.randn(b, h, t, d, dtype=DT), dim=-1).requires_grad_() for _ in range(2))
    v = torch.randn(b, h, t, d, dtype=DT)
    v = (F.normalize(v, dim=-1) if unit_values else v).requires_grad_()
    theta = (theta_scale * torch.rand(b, h, t, dtype=DT)).requires_grad_()
    log_eta = torch.rand(b, h, t, dtype=DT).log().requires_grad_()
    log_keep = (1 - 0.2 * torch.rand(b, h, t, dtype=DT)).log().requires_grad_()
    a2 = torch.randn(h, d, f, dtype=DT, requires_grad=True)
    a1 = (0.5 * torch.randn(h, f, d, dtype=DT)).requires_grad_()
    return q, k, v, theta, log_eta, log_keep, a2, a1
