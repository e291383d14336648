"""Benchmark of the learning-rate calibration's rule, by simulation against a planted optimum (no training).

Each simulated calibration runs the project's own rule (`tlmsearch.configs.lr_choice.calibrate`:
paired seeds, the best mean refined by a parabola in log2 rate, widening past an edge) on losses
drawn from a known curve: at rate 2**x (x in grid steps from the configured rate, the "auto" grid
x = -2..2) and seed s,

    loss = curvature * (x - x_opt)**2 + u_s + e_(x,s),   e ~ N(0, (paired_sd / sqrt 2)**2),  u_s ~ N(0, 0.05**2)

so the optimum is the grid rate x_opt, a seed's offset u_s is shared by every rate (the pairing)
and the difference of two rates at one seed has sd `paired_sd`. A rate drawn once keeps its
losses when widening asks for it (a simulated run is trained once). Beside the rule at 3 and 5
seeds: today's rule before seeds (one seed per rate, the lowest loss, no widening).

Reported per cell: the share of calibrations whose chosen rate lies within one grid step of the
optimum (|log2 chosen - x_opt| <= 1), the share exactly at it (within half a step), the mean
runs trained, and, for the rule with seeds, the share whose 95% interval (`configs.lr_rule.
bootstrap_interval`) holds the optimum (its coverage) and the interval's median width in grid steps.

    python -m bench.bench_lr_rule              # 2,000 calibrations a cell (about 10 minutes on one core)
    python -m bench.bench_lr_rule --quick      # 300 a cell, no intervals (seconds)
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import print_header, save_result, table
from tlmsearch.configs.lr_calibration import MAX_WIDEN
from tlmsearch.configs.lr_choice import LrCalibration, calibrate

GRID = (-2, -1, 0, 1, 2)  # "auto": the configured rate times 1/4 .. 4, in log2 steps
SEED_SD = 0.05  # a seed's offset shared by every rate (cancels in the paired choice)
# (label, curvature in nats per grid step squared, paired sd of a rate difference in nats): the committed
# reference ladder (runs/reference/ladder) per point: curvature from a least-squares parabola in log2 rate over
# its 5-rate calibration, paired sd the median over its verification's profile pairs of the sd over seeds of
# the paired difference; the smallest point's calibration had its best rate at the edge (no curvature), so it
# is paired with the median curvature of the committed calibrations with an inside optimum (0.014). The last
# cell is the 8-layer ladder's first point (runs/reference/ladder8, the README's answer), measured the same way:
# its own 5-rate calibration of 3 paired seeds (means, not single runs) and its verification's 15 profile pairs
# over seeds 1-20
MEASURED = (
    ("ladder cpu-xs@20 (6 layers, 3129 steps)", 0.0056, 0.0095),
    ("ladder cpu-xs:n_layers=2@20 (1044 steps)", 0.014, 0.0168),
    ("ladder d_model=32,n_layers=2@20 (262 steps)", 0.014, 0.0697),
    ("ladder8 d_model=16,n_heads=1,n_layers=8@20 (263 steps)", 0.075, 0.101),
)


def measured(point_dir: str | Path) -> tuple[float, float]:
    """(curvature, paired sd) of a committed ladder point, as `MEASURED` states them: the curvature
    of the least-squares parabola in log2 rate through its calibration's per-rate means (a run each
    where it trained one seed a rate), and the median over every pair of its verified profiles of the
    sd over seeds (pilot and deciding) of their paired val_loss difference."""
    point = Path(point_dir)
    cal = json.loads((point / "lr_calibration.json").read_text())
    means = np.array(cal.get("means") or cal["losses"], float)
    x = np.log2(np.array(cal["rates"], float))
    ok = np.isfinite(means)
    curvature = float(np.polyfit(x[ok], means[ok], 2)[0])
    plan = json.loads((point / "verify.json").read_text())
    seeds = sorted({*plan.get("pilot_seeds", []), *plan["decision_seeds"]})
    losses: dict[str, dict[int, float]] = {}
    for line in (point / "trials.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["kind"] == "verify" and r["status"] == "complete" and r["seed"] in seeds:
            losses.setdefault(json.dumps(r["profile"], sort_keys=True), {})[r["seed"]] = r["metrics"]["val_loss"]
    sds = [
        statistics.stdev(a[s] - b[s] for s in seeds if s in a and s in b)
        for a, b in itertools.combinations(losses.values(), 2)
    ]
    return curvature, statistics.median(sds)


RULES = (("one seed, lowest loss (before)", 1, 0), ("3 paired seeds", 3, MAX_WIDEN), ("5 paired seeds", 5, MAX_WIDEN))


def simulate_one(
    rng: np.random.Generator, curvature: float, paired_sd: float, x_opt: float, seeds: int, widen: int
) -> LrCalibration:
    """One calibration of the rule on the planted curve (losses drawn per rate as the rule asks)."""
    offsets = rng.normal(0.0, SEED_SD, seeds)
    drawn: dict[float, np.ndarray] = {}

    def run(rate: float, seed: int) -> tuple[bool, float, str | None]:
        if rate not in drawn:
            x = math.log2(rate)
            drawn[rate] = curvature * (x - x_opt) ** 2 + offsets + rng.normal(0.0, paired_sd / math.sqrt(2), seeds)
        return True, float(drawn[rate][seed]), None

    rates = tuple(2.0**x for x in GRID)
    return calibrate(rates, tuple(range(seeds)), run, configured=1.0, steps=1, widen=widen)


def cell(
    curvature: float, paired_sd: float, x_opt: float, seeds: int, widen: int, n: int, intervals: bool
) -> dict[str, Any]:
    rng = np.random.default_rng(zlib.crc32(f"{curvature}/{paired_sd}/{x_opt}/{seeds}/{widen}".encode()))
    within = exact = runs = covered = 0
    widths: list[float] = []
    for _ in range(n):
        cal = simulate_one(rng, curvature, paired_sd, x_opt, seeds, widen)
        error = abs(math.log2(cal.rate) - x_opt)
        within += error <= 1.0 + 1e-9
        exact += error <= 0.5 + 1e-9
        runs += len(cal.rates) * seeds
        if intervals and seeds > 1:
            interval = cal.interval
            if interval is not None:
                lo, hi = (math.log2(v) for v in interval)
                covered += lo - 1e-9 <= x_opt <= hi + 1e-9
                widths.append(hi - lo)
    out: dict[str, Any] = {"within_one_step": within / n, "at_optimum": exact / n, "runs": runs / n}
    out["within_se"] = math.sqrt(out["within_one_step"] * (1 - out["within_one_step"]) / n)
    if intervals and seeds > 1:
        out["coverage"] = covered / n
        out["median_width_steps"] = float(np.median(widths)) if widths else math.nan
    return out


def run_all(n: int, intervals: bool, optima: tuple[float, ...] = (-1.0, 0.0, 1.0, 3.0)) -> list[dict[str, Any]]:
    rows = []
    for label, curvature, sd in MEASURED:
        for x_opt in optima:
            for rule, seeds, widen in RULES:
                rows.append(
                    {"cell": label, "curvature": curvature, "paired_sd": sd, "x_opt": x_opt, "rule": rule}
                    | cell(curvature, sd, x_opt, seeds, widen, n, intervals)
                )
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="simulated calibrations a cell")
    parser.add_argument("--quick", action="store_true", help="300 a cell, no bootstrap intervals")
    parser.add_argument("--out", default="", help="write the result JSON here")
    args = parser.parse_args(argv)
    n = 300 if args.quick else args.n
    info = print_header("learning-rate rule on a planted optimum")
    start = time.time()
    rows = run_all(n, intervals=not args.quick)
    cols = ["cell", "x_opt", "rule", "within_one_step", "at_optimum", "runs", "coverage", "median_width_steps"]
    print(table([[_fmt(r.get(c, "")) for c in cols] for r in rows], cols))
    result = {"calibrations": n, "rows": rows, "seconds": time.time() - start}
    path = save_result("lr_rule", {**result, "machine": info}, args.out or None)
    print(f"{n} calibrations a cell, {result['seconds']:.0f} s; wrote {path}")
    return result


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    main()
