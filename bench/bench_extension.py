"""Alpha spent once: a verification extended after its last look, simulated against known truth.

A verification that ends inconclusive at its last look is extended to more seeds (the same seeds
continued). Four ways to do it, each a whole history simulated from the first look to the last
(`sequential_sim.simulate_extension`), the history's outcome being the first verification's when
it decided, else the extension's:

- refused: no extension (what `verify` does at the same alpha): the first verification alone;
- today's re-planning: the extension is a fresh design at full alpha on seeds 1..N, as if nothing
  had been looked at (the joint study's 2, 4 -> 4, 8, 12; `verify --max-seeds 40` on a fixed plan);
- a new stage (`verify --alpha 0.1` after a verification at 0.05): the earlier looks keep their
  boundaries, the new looks spend the 0.05 not yet spent (`analysis.sequential_stages`); the
  history's stated level is 0.1;
- a new stage with the history planned at 0.05: the first verification at 0.025, the extension
  spends the other 0.025.

Scenarios: (A) the joint study's path: 7 candidates, looks at 2, 4 seeds (O'Brien-Fleming), then
4, 8, 12; paired sd 0.03 nats (the median of its 7 candidates' paired sds over 12 seeds,
`runs/reference/joint/transformer`). (B) a fixed plan re-run with a larger --max-seeds: 8
candidates, 17 fresh seeds (--max-seeds 20 after a 3-seed pilot) then 37 (--max-seeds 40), paired
sd 0.0201 (the reference study's Transformer pilot). (C) a planned sequential verification
(4 looks at 13..52 seeds, `plan_max_seeds` at 0.0201) re-planned at twice its seeds (26..104).

Truths: every candidate equal to cosine (a "better" is false); one candidate exactly one margin
(1%) better and the others equal, or the others 5% worse (a "near_optimal" is false). Margin 1%.

    python -m bench.bench_extension            # 20,000 histories a cell
    python -m bench.bench_extension --quick    # 4,000
"""

from __future__ import annotations

import argparse
import math
import time
import zlib
from typing import Any

from bench._common import print_header, save_result, table
from tlmsearch.analysis import sequential as sq
from tlmsearch.analysis import sequential_sim as sim

MARGIN = 0.01


def scenarios() -> dict[str, dict[str, Any]]:
    return {
        "A: joint study (2,4 -> 4,8,12)": {"m": 7, "sd": 0.03, "first": (2, 4), "then": (4, 8, 12)},
        "B: fixed 17 -> 37 seeds": {"m": 8, "sd": 0.0201, "first": (17,), "then": (37,)},
        "C: OBF 13..52 -> 26..104": {"m": 8, "sd": 0.0201, "first": (13, 26, 39, 52), "then": (26, 52, 78, 104)},
    }


def cells(m: int) -> dict[str, tuple[list[float], str]]:
    return {
        "equal": ([0.0] * m, "better"),
        "margin": ([MARGIN] + [0.0] * (m - 1), "near_optimal"),
        "margin_others_worse": ([MARGIN] + [-0.05] * (m - 1), "near_optimal"),
    }


def ways(first: tuple[int, ...], then: tuple[int, ...]) -> list[tuple[str, float, sq.Design, sq.Design, str]]:
    """(name, the history's stated alpha, first design, extension design, how)."""
    end = first[-1]
    new = tuple(n for n in then if n > end)
    stage = sq.Design(looks=first + new, alpha=0.1, stages=(sq.Stage(end, 0.05),))
    planned = sq.Design(looks=first + new, alpha=0.05, stages=(sq.Stage(end, 0.025),))
    return [
        ("refused (first verification only)", 0.05, sq.Design(looks=first), sq.Design(looks=then), "refuse"),
        ("today: re-planned at full alpha", 0.05, sq.Design(looks=first), sq.Design(looks=then), "replan"),
        ("new stage, history at 0.1", 0.1, sq.Design(looks=first), stage, "stage"),
        ("new stage, history at 0.05 (first at 0.025)", 0.05, sq.Design(looks=first, alpha=0.025), planned, "stage"),
    ]


def run(n: int) -> list[dict[str, Any]]:
    rows = []
    for scen, s in scenarios().items():
        for name, stated, first, then, how in ways(s["first"], s["then"]):
            row: dict[str, Any] = {"scenario": scen, "way": name, "stated_alpha": stated, "m": s["m"], "sd": s["sd"]}
            for cell, (truth, _) in cells(s["m"]).items():
                res = sim.simulate_extension(
                    truth, s["sd"], first, then, how=how, n_studies=n, seed=zlib.crc32(f"{scen}/{cell}".encode())
                )
                row[cell] = {
                    "better": res.better,
                    "near_optimal": res.near_optimal,
                    "seeds_per_profile": res.seeds_per_profile,
                }
            rows.append(row)
    return rows


def _rate(p: float, n: int, stated: float) -> str:
    se = math.sqrt(max(p * (1.0 - p), 1e-12) / n)
    flag = " **over**" if p > stated + 3.0 * math.sqrt(stated * (1.0 - stated) / n) else ""
    return f"{p:.4f}±{se:.4f}{flag}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="4,000 histories a cell instead of 20,000")
    args = ap.parse_args(argv)
    n = 4000 if args.quick else 20_000
    print_header("extension after the last look: false claims over the whole history")
    t0 = time.perf_counter()
    rows = run(n)
    tol = 3.0 * math.sqrt(0.05 * 0.95 / n)
    lines = [
        [
            r["scenario"],
            r["way"],
            f"{r['stated_alpha']:g}",
            _rate(r["equal"]["better"], n, r["stated_alpha"]),
            _rate(r["margin"]["near_optimal"], n, r["stated_alpha"]),
            _rate(r["margin_others_worse"]["near_optimal"], n, r["stated_alpha"]),
            f"{r['margin']['better']:.3f}",
            f"{r['equal']['seeds_per_profile']:.1f}",
        ]
        for r in rows
    ]
    print(
        table(
            lines,
            [
                "scenario",
                "extension",
                "stated alpha",
                "equal: better",
                "1x: near",
                "1x, others -5%: near",
                "1x: better (power)",
                "seeds, equal",
            ],
        )  # fmt: skip
    )
    print(f"\n{n} histories a cell; 'over': above the stated alpha by more than 3 Monte-Carlo SEs ({tol:.4f} at 0.05)")
    print(f"{time.perf_counter() - t0:.1f} s; wrote {save_result('extension', {'n': n, 'rows': rows})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
