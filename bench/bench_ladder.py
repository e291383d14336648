"""Benchmark of the ladder's trend test, by simulation against known truth (no training).

Simulated ladders (`tlmsearch.ladders.simulate`, vectorised): k = 3, 4 or 6 points spread evenly
over 100x of training compute, s paired seeds a point, a paired sd per point that is flat (0.012
nats), falls 3x (0.02 -> 0.007) or falls as the committed reference ladder's does (cosine over
uniform: 0.078 -> 0.014 -> 0.0048 nats, about 16x; `runs/reference/ladder`), and at every point
an offset of sd 0, 0.005, 0.01 or 0.02 nats that no compute explains (what else differs between
points: learning rate, epochs, shape). Two truths:

- no trend: the share of ladders in which the test says "shown" (false trends; at most
  alpha = 0.05 plus the Monte-Carlo tolerance, three standard errors);
- a slope the size of the paper's effect: the paper's +12.7 % perplexity of cosine over uniform
  at 440M (log 16.28/14.44 = 0.120 nats, 6 N D FLOPs at 70 tokens per parameter = 8.1e19) reached
  linearly in log-compute from a zero gain at the reference ladder's largest point (1.67e13
  FLOPs): 0.120 / 6.69 decades = 0.0179 nats per 10x of compute. The share that says "shown" is
  the power; the slope's and the extrapolation's (3 decades beyond the largest point) coverage.

Two tests: "new" (`ladders.trend_model`: random-effects line, Hartung-Knapp variance, the widest
of t on k - 2 df and pivots over the seed-estimated se at tau^2 and at its Q-profile upper end;
"shown" only from 4 points of 4 paired seeds) and "legacy" (the fit before issue 46,
`ladders.trend_legacy`: seed noise only). Last, the committed reference ladder's own geometry
(its 3 points' FLOPs and paired sd, 9 seeds) under both.

    python -m bench.bench_ladder                 # 10,000 ladders a cell (about 15 minutes)
    python -m bench.bench_ladder --quick         # 1,000 ladders a cell
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np

from bench._common import print_header, save_result, table
from tlmsearch.analysis.crossarch import COSINE, PAPER_PPL
from tlmsearch.ladders.simulate import simulate
from tlmsearch.ladders.summary import paper_point

SPREADS = {"flat": (0.012, 0.012), "falls-3x": (0.02, 0.007), "reference": (0.078, 0.0048)}
OFFSETS = (0.0, 0.005, 0.01, 0.02)
POWER_OFFSETS = (0.0, 0.01)
KS = (3, 4, 6)
SEEDS_NULL = (3, 4, 9)
SEEDS_POWER = (4, 9)
ALPHA = 0.05
REFERENCE_TOP = 1.67e13  # training FLOPs of one run at the reference ladder's largest point (cpu-xs@20)
# the committed reference ladder itself: its points' training FLOPs and cosine-over-uniform paired sd
# (se x sqrt(9) of `tlmsearch ladder report runs/reference/ladder`), 9 deciding seeds a point
REFERENCE_COMPUTE = (1.648e11, 1.997e12, 1.669e13)
REFERENCE_SD = (0.0783, 0.0139, 0.0048)


def paper_slope() -> float:
    """The paper's 440M gain of cosine over uniform (nats), reached linearly in log10 compute from
    zero at the reference ladder's largest point."""
    gain = math.log(PAPER_PPL["uniform"]) - math.log(PAPER_PPL[COSINE])
    return gain / math.log10(paper_point()["compute"] / REFERENCE_TOP)


def run(ladders: int, draws: int, legacy: bool, ks: tuple[int, ...] = KS) -> dict[str, Any]:
    slope = paper_slope()
    rows: list[dict[str, Any]] = []
    for k in ks:
        compute = tuple(float(c) for c in np.geomspace(1e12, 1e14, k))
        for spread, (a, b) in SPREADS.items():
            sd = tuple(float(s) for s in np.geomspace(a, b, k))
            for seeds in SEEDS_NULL:
                for offset in OFFSETS:
                    t0 = time.perf_counter()
                    seed = 100_000 * k + 1000 * seeds + 10 * OFFSETS.index(offset) + list(SPREADS).index(spread)
                    common = {"seeds": seeds, "offset_sd": offset, "ladders": ladders, "alpha": ALPHA, "draws": draws}
                    new = simulate(compute, sd, slope=0.0, seed=seed, **common)
                    row: dict[str, Any] = {
                        "k": k,
                        "spread": spread,
                        "seeds": seeds,
                        "offset_sd": offset,
                        "false_shown": new.trend_rate,
                        "p_below_alpha": new.p_rate,
                        "legacy_false": None,
                        "power": None,
                        "slope_coverage": None,
                        "target_coverage": None,
                    }
                    if legacy and seeds in SEEDS_POWER:
                        old = simulate(compute, sd, slope=0.0, seed=seed, method="legacy", **common)
                        row["legacy_false"] = old.p_rate
                    if seeds in SEEDS_POWER and offset in POWER_OFFSETS:
                        up = simulate(compute, sd, slope=slope, seed=seed + 7, target_compute=1e17, **common)
                        row.update(power=up.trend_rate, slope_coverage=up.slope_coverage,
                                   target_coverage=up.target_coverage)  # fmt: skip
                    row["seconds"] = time.perf_counter() - t0
                    rows.append(row)
                    print(" ".join(f"{key}={_fmt(val)}" for key, val in row.items()), flush=True)
    reference = []
    for offset in OFFSETS:  # the committed ladder's own geometry: where issue 46's 20-55 % came from
        common = {"seeds": 9, "offset_sd": offset, "ladders": ladders, "alpha": ALPHA, "draws": draws, "slope": 0.0}
        seed = 7_000 + OFFSETS.index(offset)
        old = simulate(REFERENCE_COMPUTE, REFERENCE_SD, seed=seed, method="legacy", **common) if legacy else None
        new = simulate(REFERENCE_COMPUTE, REFERENCE_SD, seed=seed, **common)
        reference.append({"offset_sd": offset, "legacy_false": old.p_rate if old else None,
                          "false_shown": new.trend_rate, "p_below_alpha": new.p_rate})  # fmt: skip
        print(" ".join(f"{key}={_fmt(val)}" for key, val in reference[-1].items()), flush=True)
    mc = math.sqrt(ALPHA * (1 - ALPHA) / ladders)
    return {"ladders": ladders, "draws": draws, "alpha": ALPHA, "paper_slope": slope, "mc_se_at_alpha": mc,
            "tolerance": 3 * mc, "rows": rows, "reference": reference}  # fmt: skip


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--k", type=int, nargs="*", default=list(KS), help="points per ladder (default 3 4 6)")
    p.add_argument("--ladders", type=int, default=10_000, help="simulated ladders a cell (default 10000)")
    p.add_argument("--draws", type=int, default=400, help="pivot draws a ladder (default 400)")
    p.add_argument("--no-legacy", action="store_true", help="leave out the test before issue 46")
    p.add_argument("--quick", action="store_true", help="1,000 ladders a cell")
    p.add_argument("--out", help="where to write the JSON (default bench/data/ladder-latest.json)")
    args = p.parse_args(argv)
    ladders = 1000 if args.quick else args.ladders
    info = print_header("ladder trend test against known truth")
    result = run(ladders, args.draws, not args.no_legacy, tuple(args.k))
    keys = ("k", "spread", "seeds", "offset_sd", "false_shown", "p_below_alpha", "legacy_false", "power",
            "slope_coverage", "target_coverage")  # fmt: skip
    headers = ["k", "spread", "seeds", "offset sd", "false shown", "p < alpha", "legacy false", "power",
               "slope cover", "target cover"]  # fmt: skip
    print(table([[_fmt(r[h]) for h in keys] for r in result["rows"]], headers))
    print("The committed reference ladder's geometry (3 points, 9 seeds, its paired sd), no trend:")
    ref_keys = ("offset_sd", "false_shown", "p_below_alpha", "legacy_false")
    print(table([[_fmt(r[h]) for h in ref_keys] for r in result["reference"]],
                ["offset sd", "false shown", "p < alpha", "legacy false"]))  # fmt: skip
    print(
        f"{ladders} ladders a cell, {args.draws} pivot draws a ladder; tolerance at alpha {ALPHA}: "
        f"{result['tolerance']:.4f} (three Monte-Carlo standard errors); power at {result['paper_slope']:.4f} nats "
        "per 10x of compute"
    )
    path = save_result("ladder", {**result, "machine": info}, args.out)
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
