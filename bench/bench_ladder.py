"""Benchmark of the ladder's trend fit, by simulation against known truth (no training).

Simulated ladders (`tlmsearch.ladders.simulate`): k points spread evenly over 100x of training
compute, s paired seeds a point, a paired sd per point that is flat (0.012 nats), falls 3x
(0.02 -> 0.007) or falls 10x (0.03 -> 0.003) up the ladder. Two truths: a gain rising 0.01 nats
per 10x of compute (coverage of the slope's interval, of the extrapolation 3 decades beyond the
largest point, and the share of ladders that report the trend: power) and a constant gain (the
share that report a trend: false trends, at most alpha = 0.05 + the Monte-Carlo tolerance).
Two procedures: the ladder's own ("pivot": a generalised pivotal quantity over each point's
estimated se, with the Knapp-Hartung dispersion) and the textbook one ("normal": each se taken
as known, a normal critical value), which shows why the first is used.

    python -m bench.bench_ladder                 # k = 3 and 5, 2000 ladders a cell (minutes)
    python -m bench.bench_ladder --k 3 --quick   # 300 ladders a cell (seconds)
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np

from bench._common import print_header, save_result, table
from tlmsearch.ladders.simulate import simulate

SPREADS = {"flat": (0.012, 0.012), "falls-3x": (0.02, 0.007), "falls-10x": (0.03, 0.003)}
SEEDS = (2, 4, 6)
SLOPE = 0.01
ALPHA = 0.05


def cells(k: int) -> list[tuple[str, int, tuple[float, ...]]]:
    return [(name, s, tuple(np.geomspace(a, b, k))) for name, (a, b) in SPREADS.items() for s in SEEDS]


def run(ks: tuple[int, ...], ladders: int, draws: int, methods: tuple[str, ...]) -> dict[str, Any]:
    rows = []
    for k in ks:
        compute = tuple(float(c) for c in np.geomspace(1e12, 1e14, k))
        for name, seeds, sd in cells(k):
            for method in methods:
                t0 = time.perf_counter()
                seed = 1000 * k + 10 * seeds + len(name)
                up = simulate(compute, sd, seeds=seeds, slope=SLOPE, target_compute=1e17, ladders=ladders,
                              alpha=ALPHA, draws=draws, seed=seed, critical=method)  # fmt: skip
                flat = simulate(compute, sd, seeds=seeds, slope=0.0, ladders=ladders, alpha=ALPHA, draws=draws,
                                seed=seed + 1, critical=method)  # fmt: skip
                rows.append(
                    {
                        "k": k,
                        "spread": name,
                        "seeds": seeds,
                        "method": method,
                        "slope_coverage": up.slope_coverage,
                        "target_coverage": up.target_coverage,
                        "power": up.trend_rate,
                        "false_trend": flat.trend_rate,
                        "seconds": time.perf_counter() - t0,
                    }
                )
                r = rows[-1]
                print(
                    f"k={k} {name:<9} seeds={seeds} {method:<6} cover {r['slope_coverage']:.3f} "
                    f"target {r['target_coverage']:.3f} power {r['power']:.3f} false {r['false_trend']:.3f}",
                    flush=True,
                )
    mc = math.sqrt(ALPHA * (1 - ALPHA) / ladders)
    return {"ladders": ladders, "draws": draws, "alpha": ALPHA, "mc_se_at_alpha": mc, "rows": rows}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--k", type=int, nargs="*", default=[3, 5], help="points per ladder (default 3 5)")
    p.add_argument("--ladders", type=int, default=2000, help="simulated ladders a cell (default 2000)")
    p.add_argument("--draws", type=int, default=1000, help="pivot draws per fit (default 1000)")
    p.add_argument("--methods", nargs="*", default=["pivot", "normal"], help="pivot and/or normal")
    p.add_argument("--quick", action="store_true", help="300 ladders a cell")
    p.add_argument("--out", help="where to write the JSON (default bench/data/ladder-latest.json)")
    args = p.parse_args(argv)
    ladders = 300 if args.quick else args.ladders
    info = print_header("ladder trend fit against known truth")
    result = run(tuple(args.k), ladders, args.draws, tuple(args.methods))
    headers = ["k", "spread", "seeds", "method", "slope cover", "target cover", "power", "false trend"]
    print(table([[r[h] for h in ("k", "spread", "seeds", "method", "slope_coverage", "target_coverage", "power",
                                  "false_trend")] for r in result["rows"]], headers))  # fmt: skip
    print(f"{ladders} ladders a cell; Monte-Carlo se of a rate near alpha = {result['mc_se_at_alpha']:.4f}")
    path = save_result("ladder", {**result, "machine": info}, args.out)
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
