"""Benchmark of the verdict's statistics, by simulation against known truth (no training).

Part "errors": the whole decision procedure of `tlmsearch.analysis` (a variance-only pilot of 3
seeds, the seed plan capped at 20 seeds, one Holm-corrected decision at alpha 0.05 against a 1%
margin) on simulated studies with m candidates and a paired sd per seed: the rate of each
outcome when every profile equals cosine (false "better"), when one candidate is truly one
margin better (false "near_optimal"), and when one is truly 3% better (power), each with its
Monte-Carlo standard error; beside it the classic internal pilot that reuses the pilot seeds in
the decision (liberal: the reason the planner keeps the pilot out) and fixed 2- and 5-seed designs.

Part "coverage": the true coverage of scipy's BCa bootstrap interval of a mean (nominal 95% and
97.5%) by number of seeds, for normal and log-normal values: the table behind
`tlmsearch.analysis.stats.MIN_BOOTSTRAP_SEEDS`.

    python -m bench.bench_verdict            # both parts, 40000 studies a cell (about a minute)
    python -m bench.bench_verdict --quick    # 5000 studies a cell (seconds)
"""

from __future__ import annotations

import argparse
import math
import time
import zlib
from typing import Any

import numpy as np

from bench._common import print_header, save_result, table
from tlmsearch.analysis.simulation import simulate

# paired sd (nats): reference linear-vs-cosine (first verify), middle, per-seed sd at cpu-s, the
# re-verification pilot (pooled over 4 candidates, keyed initialisation)
SDS = (0.0052, 0.01, 0.015, 0.0186)
MS = (1, 2, 5)
DESIGNS = {
    "planned": {},
    "reuse-pilot": {"reuse_pilot": True},
    "fixed-2": {"fixed_seeds": 2},
    "fixed-5": {"fixed_seeds": 5},
}


def errors(n_studies: int) -> list[dict[str, Any]]:
    rows = []
    for design, kw in DESIGNS.items():
        for m in MS:
            for sd in SDS:
                cells: dict[str, Any] = {"design": design, "m": m, "sd": sd}
                for name, gains, outcome in (
                    ("null_better", [0.0] * m, "better"),
                    ("margin_near", [0.01] + [0.0] * (m - 1), "near_optimal"),
                    ("gain3_better", [0.03] + [0.0] * (m - 1), "better"),
                ):
                    sim = simulate(
                        gains, sd, n_studies=n_studies, seed=zlib.crc32(f"{design}/{m}/{sd}/{name}".encode()), **kw
                    )
                    cells[name] = sim.rate(outcome)
                    cells[name + "_se"] = sim.mc_se(outcome)
                    cells[name + "_seeds"] = float(sim.n_seeds.mean())
                rows.append(cells)
    return rows


def coverage(n_studies: int) -> list[dict[str, Any]]:
    from scipy import stats

    rng = np.random.default_rng(0)
    rows = []
    for n in (3, 5, 10, 15, 20, 30):
        row: dict[str, Any] = {"n": n}
        for dist in ("normal", "lognormal"):
            x = rng.normal(0, 1, (n_studies, n)) if dist == "normal" else rng.lognormal(0, 0.5, (n_studies, n))
            mu = 0.0 if dist == "normal" else math.exp(0.125)
            for cl in (0.95, 0.975):
                res = stats.bootstrap(
                    (x,), np.mean, axis=-1, method="BCa", n_resamples=999, confidence_level=cl, rng=rng
                )
                ci = res.confidence_interval
                row[f"{dist}_{cl}"] = float(np.mean((ci.low <= mu) & (mu <= ci.high)))
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5000 studies a cell instead of 40000")
    ap.add_argument("--part", choices=("errors", "coverage", "all"), default="all")
    args = ap.parse_args(argv)
    info = print_header("verdict statistics, simulated against known truth")
    n_err = 5000 if args.quick else 40_000
    n_cov = 500 if args.quick else 2000
    result: dict[str, Any] = {"machine": info, "n_studies_errors": n_err, "n_studies_coverage": n_cov}
    t0 = time.perf_counter()
    if args.part in ("errors", "all"):
        rows = errors(n_err)
        result["errors"] = rows
        print(f"\nerror rates and power, alpha 0.05, margin 1%, pilot 3, max 20 seeds, {n_err} studies a cell")
        print("(rate ± Monte-Carlo SE; seeds = mean seeds trained per profile)")
        print(
            table(
                [
                    [
                        r["design"],
                        r["m"],
                        r["sd"],
                        f"{r['null_better']:.4f}±{r['null_better_se']:.4f}",
                        f"{r['margin_near']:.4f}±{r['margin_near_se']:.4f}",
                        f"{r['gain3_better']:.3f}±{r['gain3_better_se']:.3f}",
                        f"{r['gain3_better_seeds']:.1f}",
                    ]
                    for r in rows
                ],
                ["design", "m", "paired sd", "equal: better", "1x margin: near", "3%: better", "seeds"],
            )
        )
    if args.part in ("coverage", "all"):
        rows = coverage(n_cov)
        result["coverage"] = rows
        print(f"\nBCa bootstrap coverage of the mean, {n_cov} studies a cell, 999 resamples")
        print(
            table(
                [[r["n"], *(r[k] for k in r if k != "n")] for r in rows],
                ["seeds", "normal 95%", "normal 97.5%", "lognormal 95%", "lognormal 97.5%"],
            )
        )
    print(f"\n{time.perf_counter() - t0:.1f} s; wrote {save_result('verdict', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
