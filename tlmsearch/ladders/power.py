"""Can a ladder's trend test answer its question? Its power, before anything trains.

`tlmsearch ladder plan ... --paired-sd 0.05` simulates the planned ladder with a known trend
(`ladders.simulate`: the same calibrated test `fit_trend` applies, on the planned points and
seeds, with the stated paired sd of a profile minus uniform at every point) and says how often
the test would show it: at the paper's slope for a compute arm (cosine over uniform growing
linearly in log10 compute from nothing at the ladder's largest point to the paper's 440M gain),
and the smallest slope it shows four times in five. A ladder whose power is a few percent can
still give each point's verdict and the slope's interval; it cannot show a trend, and should
know that before its hours are spent (more points, or more seeds where the spread is wide).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tlmsearch.errors import ConfigError
from tlmsearch.ladders.simulate import simulate

LADDERS = 2000  # simulated ladders a slope: Monte-Carlo sd of a power near 0.8 about 0.009
DRAWS = 200  # pivot draws a simulated ladder
TARGET_POWER = 0.8
SEED = 0


def check_paired_sd(value: float) -> float:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ConfigError(
            f"paired_sd={value!r} must be a finite number of nats above 0: the sd over seeds of a profile's final "
            "loss minus uniform's on the same seed (a pilot's, or a similar run's; e.g. 0.05)"
        )
    return float(value)


def trend_power(
    x: Sequence[float],
    seeds: Sequence[int],
    paired_sd: float,
    *,
    paper_slope: float | None = None,
    alpha: float = 0.05,
    ladders: int = LADDERS,
) -> dict[str, Any]:
    """The trend test's power on points at `x` (log10 compute, or log2 layers), `seeds` deciding
    seeds a point, `paired_sd` nats at every point: at `paper_slope` (gain a unit of x) when given,
    and the smallest slope shown with `TARGET_POWER` (bisection in the slope; None beyond 1 nat a
    unit). Deterministic (`SEED`)."""
    paired_sd = check_paired_sd(paired_sd)
    compute = [10.0**v for v in x]  # `simulate` fits against log10 of its points: x itself
    sds = [paired_sd] * len(x)

    def power(slope: float) -> float:
        return simulate(
            compute, sds, seeds=list(seeds), slope=slope, alpha=alpha, ladders=ladders, draws=DRAWS, seed=SEED
        ).trend_rate

    out: dict[str, Any] = {"paired_sd": paired_sd, "seeds": list(seeds), "ladders": ladders, "points": len(x)}
    if len(x) < 3:
        out["why"] = f"{len(x)} points: a trend test needs at least 3"
        return out
    if paper_slope is not None and paper_slope > 0:
        out["paper_slope"] = paper_slope
        out["power_at_paper"] = power(paper_slope)
    lo, hi = 0.0, 1.0
    if power(hi) < TARGET_POWER:
        out["slope_for_power"] = None
        return out
    for _ in range(12):  # to 1/4096 of a nat a unit
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if power(mid) < TARGET_POWER else (lo, mid)
    out["slope_for_power"] = hi
    return out


def power_text(p: dict[str, Any], arm: str) -> str:
    """One paragraph: what the trend test can show on this plan."""
    unit = "a doubling of depth" if arm == "depth" else "a decade of compute"
    head = (
        f"trend test's power ({p['points']} points, {'/'.join(map(str, p['seeds']))} deciding seeds a point, paired sd "
        f"{p['paired_sd']:g} nats at every point, {p['ladders']:,} simulated ladders; --paired-sd)"
    )
    if "why" in p:
        return f"{head}: {p['why']}"
    parts = []
    if "power_at_paper" in p:
        parts.append(
            f"{p['power_at_paper']:.0%} at the paper's slope ({p['paper_slope']:+.4f} nats {unit}: cosine over uniform "
            "growing from nothing at the largest point to the paper's 440M gain)"
        )
    slope = p.get("slope_for_power")
    if slope is None:
        parts.append(f"no slope up to 1 nat {unit} is shown {TARGET_POWER:.0%} of the time")
    else:
        ratio = f", {slope / p['paper_slope']:.1f}x the paper's" if p.get("paper_slope") else ""
        parts.append(
            f"{TARGET_POWER:.0%} power from {slope:.4f} nats {unit} ({math.expm1(slope):.1%} in perplexity{ratio})"
        )
    return f"{head}: " + "; ".join(parts)


__all__ = ["check_paired_sd", "power_text", "trend_power"]
