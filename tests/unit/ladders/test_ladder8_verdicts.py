"""The decided points of the committed 8-layer ladder, read from their records: the figures the
README and the ladder's README state for its two largest points, where cosine and uniform alone
were verified (one candidate against cosine, so one Holm step)."""

from __future__ import annotations

from pathlib import Path

import pytest
from committed import committed_verdict

LADDER = Path(__file__).resolve().parents[3] / "runs/reference/ladder8"
POINT3 = "cpu-xs-d_model48-n_heads3-base_width144-n_layers8-t20"
POINT4 = "cpu-xs-n_layers8-t20"


def _pct(interval: dict) -> list[float]:
    return [round(100 * interval[k], 2) for k in ("estimate", "low", "high")]


@pytest.mark.parametrize(
    ("point", "seeds", "regret", "p_within"),
    [
        (POINT3, 9, [-0.12, -0.78, 0.55], 0.00747),  # the pilot's sd 0.0137 nats planned 9 fresh seeds
        (POINT4, 4, [0.33, -0.33, 1.0], 0.0496),  # 0.0047 nats planned 4; uniform leads by mean
    ],
)
def test_cosine_is_shown_within_the_margin_of_uniform(
    point: str, seeds: int, regret: list[float], p_within: float
) -> None:
    v = committed_verdict(LADDER / point)
    assert v["outcome"] == "near_optimal" and v["n_seeds"] == seeds and v["n_candidates"] == 1
    assert _pct(v["regret"]) == regret and v["regret"]["confidence"] == 0.9
    assert v["regret"]["high"] < v["margin"] == pytest.approx(0.01)  # the bound that decides it
    (uniform,) = (c for c in v["comparisons"] if c["label"] == "uniform")
    assert uniform["p_within"] == pytest.approx(p_within, rel=1e-3)  # one Holm step: adjusted = raw
    assert f"Holm over 1 candidate, n={seeds} seeds" in v["headline"]
