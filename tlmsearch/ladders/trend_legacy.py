"""The ladder's trend test before issue 46, kept (vectorised) only to show by simulation why it
was replaced (`bench/bench_ladder.py`, `tests/unit/ladders/test_ladder_simulation.py`).

It fitted gain_i = a + b * log10(C_i) + noise_i with noise_i ~ N(0, se_i^2) alone: weighted
least squares with weights 1 / se_i^2, the variance times max(1, Q / (k - 2)), and a critical
value from a generalised pivot over each point's estimated se that simulates seed noise only.
Points scattered off the line by more than their seeds (a learning rate, a depth, an epoch count
that differs between points) were read as a trend: with 3 points and offsets of sd 0.005-0.02
nats it says p < 0.05 in 20-55 % of ladders with no trend (bench/README.md section 15).
"""

from __future__ import annotations

import numpy as np


def legacy_fit(x: np.ndarray, m: np.ndarray, se: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The old fit's slope and its standard error (times the dispersion floored at one)."""
    w = 1.0 / se**2
    sw = w.sum(-1, keepdims=True)
    xbar = (w * x).sum(-1, keepdims=True) / sw
    sxx = (w * (x - xbar) ** 2).sum(-1, keepdims=True)
    c = w * (x - xbar) / sxx
    slope = (c * m).sum(-1)
    var = (c**2 * se**2).sum(-1)
    k = x.shape[-1]
    if k > 2:
        mean = (w * m).sum(-1, keepdims=True) / sw
        resid = m - mean - slope[..., None] * (x - xbar)
        var = var * np.maximum(1.0, (w * resid**2).sum(-1) / (k - 2))
    return slope, np.sqrt(var)


def legacy_p(
    x: np.ndarray, m: np.ndarray, se: np.ndarray, n: np.ndarray, *, draws: int, rng: np.random.Generator
) -> np.ndarray:
    """The old p-value of "slope = 0" over the leading axes of m and se (simulated ladders)."""
    slope, s = legacy_fit(x, m, se)
    t_obs = np.abs(slope / s)
    df = n - 1.0
    shape = (*se.shape[:-1], draws, se.shape[-1])
    sigma = se[..., None, :] * np.sqrt(df / rng.chisquare(df, size=shape))
    noise = rng.normal(0.0, sigma)
    se_star = sigma * np.sqrt(rng.chisquare(df, size=shape) / df)
    b, sb = legacy_fit(x, noise, se_star)
    return (1.0 + (np.abs(b / sb) >= t_obs[..., None]).sum(-1)) / (draws + 1.0)


__all__ = ["legacy_fit", "legacy_p"]
