"""Small helpers shared by the built-in spaces (pure: no Optuna import)."""

from __future__ import annotations

from tlmsearch.profiles import ProfileSpec, resolve_params

# a cosine or linear taper is fixed by its start/end ratio; the spaces keep the mean at 1
# (start + end = 2, as in the paper) and sample `start` alone
START_RANGE = (0.2, 1.8)


def normalized_start(spec: ProfileSpec) -> float | None:
    """`start` of an equivalent schedule with start + end = 2, or None for other families."""
    if spec.family == "uniform":
        return 1.0
    if spec.family not in ("cosine", "linear"):
        return None
    p = resolve_params(spec.family, spec.params)
    s, e = float(p["start"]), float(p["end"])
    start = 2 * s / (s + e)
    return start if START_RANGE[0] <= start <= START_RANGE[1] else None


def linear_knots(spec: ProfileSpec, k: int) -> list[float] | None:
    """Knot values that reproduce a uniform or linear spec exactly (a monotone cubic through
    collinear knots is that line), scaled to a first knot of 1; None for other families."""
    start = normalized_start(spec)
    if start is None or spec.family == "cosine":
        return None
    values = [start + (2.0 - 2 * start) * i / (k - 1) for i in range(k)]
    return [v / values[0] for v in values]
