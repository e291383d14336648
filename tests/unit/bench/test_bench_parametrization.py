"""The parametrisation benchmark: its run order and its paired statistics (no training)."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from bench.bench_parametrization import analyse, plan


def test_plan_runs_uniform_once_per_seed_and_rate_seed_by_seed() -> None:
    order = plan([0, 1], [1e-3, 2e-3])
    assert order[:3] == [
        ("uniform", 0, 1e-3, "standard"),
        ("cosine", 0, 1e-3, "standard"),
        ("cosine", 0, 1e-3, "width"),
    ]
    assert {k[1] for k in order[:6]} == {0} and len(order) == len(set(order)) == 12
    assert not any(k[0] == "uniform" and k[3] == "width" for k in order)


def rows(gaps: dict[tuple[str, float], list[float]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for (par, lr), ds in gaps.items():
        for seed, d in enumerate(ds):
            base = 2.0 + 0.01 * seed
            if par == "standard":
                out.append({"profile": "uniform", "seed": seed, "lr": lr, "parametrization": par, "val_loss": base + d})
            out.append({"profile": "cosine", "seed": seed, "lr": lr, "parametrization": par, "val_loss": base})
    return out


def test_paired_gaps_reuse_the_uniform_run_and_a_flip_is_named() -> None:
    std = {("standard", 1e-3): [0.01, 0.02, 0.03], ("standard", 4e-3): [-0.01, -0.02, -0.01]}
    wid = {("width", 1e-3): [0.01, 0.02, 0.03], ("width", 4e-3): [0.005, 0.001, 0.002]}
    data = rows(std)
    # width's cosine runs: the uniform loss (shared with standard) minus the width gap
    for (_, lr), ds in wid.items():
        for seed, d in enumerate(ds):
            u = next(r["val_loss"] for r in data if r["profile"] == "uniform" and r["seed"] == seed and r["lr"] == lr)
            data.append({"profile": "cosine", "seed": seed, "lr": lr, "parametrization": "width", "val_loss": u - d})
    text, fig = analyse(data)
    assert fig["standard/0.001"]["mean"] == pytest.approx(0.02)
    assert fig["standard/0.001"]["sd"] == pytest.approx(statistics.stdev([0.01, 0.02, 0.03]))
    assert fig["standard/0.004"]["mean"] == pytest.approx(-0.04 / 3)
    assert fig["width/0.001"]["gaps"] == pytest.approx([0.01, 0.02, 0.03])
    assert "standard: the sign of the mean gap CHANGES with the rate" in text
    assert "width: the sign of the mean gap does not change" in text
