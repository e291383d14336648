"""Group-sequential verification against today's fixed plan, simulated against known truth.

At the reference study's spreads (`runs/reference/study`: per architecture, the paired sd its
verify pilot measured, the largest over 8 candidates, the figure behind the seed plans of 63, 83,
131 and 268 fresh seeds), m = 8 candidates against cosine, margin 1%, alpha 0.05:

- today's fixed plan: a 3-seed pilot (spread only) then `needed` fresh seeds that decide once
  (`planning.plan_seeds`, uncapped), i.e. 3 + needed seeds per profile;
- a fixed design (one look) whose N is planned by simulation for the same 80% target, no pilot:
  what planning to the target itself saves before any look;
- group-sequential (`tlmsearch.analysis.sequential`), K looks, O'Brien-Fleming-type (or
  Pocock-type) spending, Holm at each look, decided candidates stop, a "better" ends the study:
  (a) at the same N_max as today's plan (no pilot), (b) at the N_max planned for the same 80%
  power target (`plan_max_seeds`, simulated), (c) the wrong procedure (nominal alpha at every
  look) for contrast.

Truths (cells): every candidate equals cosine (false "better"; power of "near_optimal"); one
candidate exactly one margin better, the others equal (false "near_optimal"); the same with the
others 5% worse (they are decided at once and pass their alpha on: the hardest case for the
non-inferiority family); one candidate 3% better (power of "better"). Seeds: the mean training
runs per profile (cosine's seeds plus every candidate's, over m + 1) and the mean seeds of
cosine, which trains to the last look taken.

Also the t conversion on its own: the crossing rate of one sequential t test under its null, with
the plain conversion and with the simulated calibration, at few seeds.

    python -m bench.bench_sequential            # 20,000 studies a cell (about two minutes)
    python -m bench.bench_sequential --quick    # 4,000 studies a cell
"""

from __future__ import annotations

import argparse
import math
import time
import zlib
from typing import Any

import numpy as np

from bench._common import print_header, save_result, table
from tlmsearch.analysis import sequential as sq
from tlmsearch.analysis import sequential_sim as sim
from tlmsearch.analysis.planning import plan_seeds

# per architecture: the paired sd of the reference study's verify pilot (seeds 1-3, the largest of
# 8 candidates) and its candidates; `runs/reference/study/<arch>/verify.json` plan.sd
REFERENCE = {
    "transformer": 0.02013273353095608,
    "gated_attention": 0.025394811132629154,
    "hope_attention": 0.036622875856865994,
    "titans": 0.017381812273359845,
}
M = 8
PILOT = 3
MARGIN, ALPHA, POWER = 0.01, 0.05, 0.8
LOOKS = 4


def cells(m: int) -> dict[str, tuple[list[float], str]]:
    return {
        "equal": ([0.0] * m, "better"),
        "margin": ([MARGIN] + [0.0] * (m - 1), "near_optimal"),
        "margin_others_worse": ([MARGIN] + [-0.05] * (m - 1), "near_optimal"),
        "gain3": ([0.03] + [0.0] * (m - 1), "better"),
    }


def run_design(name: str, d: sq.Design, sd: float, n: int, extra_seeds: int = 0) -> dict[str, Any]:
    row: dict[str, Any] = {"design": name, "looks": list(d.looks), "spending": d.spending}
    for cell, (gains, _) in cells(M).items():
        s = sim.simulate(gains, sd, d, n_studies=n, seed=zlib.crc32(f"{name}/{sd}/{cell}".encode()))
        row[cell] = {
            "better": s.better,
            "near_optimal": s.near_optimal,
            "inconclusive": s.inconclusive,
            "seeds_per_profile": s.seeds_per_profile + extra_seeds,
            "cosine_seeds": s.cosine_seeds + extra_seeds,
        }
    return row


def architecture(arch: str, sd: float, n: int) -> dict[str, Any]:
    plan = plan_seeds(
        sd=sd, pilot_seeds=PILOT, margin=MARGIN, alpha=ALPHA, n_candidates=M, power=POWER, max_seeds=10_000
    )
    fixed = plan.n_seeds  # pilot + needed
    planned = sim.plan_max_seeds(sd, M, LOOKS, margin=MARGIN, alpha=ALPHA, power=POWER)
    planned8 = sim.plan_max_seeds(sd, M, 8, margin=MARGIN, alpha=ALPHA, power=POWER)
    planned1 = sim.plan_max_seeds(sd, M, 1, margin=MARGIN, alpha=ALPHA, power=POWER)  # one look: a fixed design
    kw = {"margin": MARGIN, "alpha": ALPHA}
    designs = [
        ("today: fixed plan", sq.Design(looks=(plan.final_seeds,), **kw), PILOT),
        ("fixed, N planned by simulation, no pilot", sq.Design(looks=(planned1,), **kw), 0),
        (f"OBF {LOOKS} looks, N_max = today's", sq.design(fixed, LOOKS, **kw), 0),
        (f"OBF {LOOKS} looks, N_max planned", sq.design(planned, LOOKS, **kw), 0),
        ("OBF 8 looks, N_max planned", sq.design(planned8, 8, **kw), 0),
        (f"Pocock {LOOKS} looks, N_max = today's", sq.design(fixed, LOOKS, spending="pocock", **kw), 0),
        (f"nominal {LOOKS} looks (wrong), N_max = today's", sq.design(fixed, LOOKS, spending="nominal", **kw), 0),
    ]
    rows = [run_design(name, d, sd, n, extra) for name, d, extra in designs]
    for r in rows:
        r["ratio_equal"] = r["equal"]["seeds_per_profile"] / fixed
        r["ratio_gain3"] = r["gain3"]["seeds_per_profile"] / fixed
        r["ratio_margin"] = r["margin"]["seeds_per_profile"] / fixed
    return {"arch": arch, "sd": sd, "needed": plan.needed, "fixed_seeds": fixed, "planned_max": planned, "rows": rows}


def t_conversion(n_paths: int) -> list[dict[str, Any]]:
    """Crossing rate of one sequential t test under H0, plain conversion vs calibrated (fresh paths:
    seeds other than the calibration's)."""
    out = []
    for looks in ((2, 4, 6), (2, 4, 6, 8, 10), (4, 8, 12, 16, 20), (20, 40, 60, 80)):
        paths = np.vstack(
            [sq.null_t_paths(looks, min(400_000, n_paths - i), seed=7 + i) for i in range(0, n_paths, 400_000)]
        )
        for a in (ALPHA, ALPHA / M):
            cal = float(sq.calibrated_levels(looks, [a], "obf")[0])
            plain = float((paths >= sq.t_boundaries(looks, a, "obf")).any(axis=1).mean())
            fixed = float((paths >= sq.t_boundaries(looks, cal, "obf")).any(axis=1).mean())
            out.append({"looks": list(looks), "alpha": a, "plain": plain, "calibrated": fixed, "level": cal})
    return out


def _rate(x: float, n: int) -> str:
    return f"{x:.4f}±{math.sqrt(max(x * (1 - x), 1e-12) / n):.4f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4,000 studies a cell instead of 20,000")
    args = ap.parse_args(argv)
    info = print_header("group-sequential verification, simulated against known truth")
    n = 4000 if args.quick else 20_000
    t0 = time.perf_counter()
    result: dict[str, Any] = {"machine": info, "n_studies": n, "margin": MARGIN, "alpha": ALPHA, "m": M}
    archs = []
    for a, sd in REFERENCE.items():
        archs.append(architecture(a, sd, n))
        print(f"  {a}: done at {time.perf_counter() - t0:.0f} s", flush=True)
    result["architectures"] = archs
    print(f"\n{M} candidates, margin {MARGIN:.0%}, alpha {ALPHA}, {n} studies a cell (rate ± Monte-Carlo SE)")
    print("seeds = mean runs per profile (pilot included for today's plan); x = that / today's fixed plan")
    lines = []
    for a in archs:
        for r in a["rows"]:
            lines.append(
                [
                    a["arch"],
                    f"{a['sd']:.4f}",
                    r["design"],
                    ",".join(map(str, r["looks"])),
                    _rate(r["equal"]["better"], n),
                    f"{r['equal']['near_optimal']:.3f}",
                    _rate(r["margin"]["near_optimal"], n),
                    _rate(r["margin_others_worse"]["near_optimal"], n),
                    f"{r['gain3']['better']:.3f}",
                    f"{r['equal']['seeds_per_profile']:.1f} ({r['ratio_equal']:.2f}x)",
                    f"{r['margin']['seeds_per_profile']:.1f} ({r['ratio_margin']:.2f}x)",
                    f"{r['gain3']['seeds_per_profile']:.1f} ({r['ratio_gain3']:.2f}x)",
                ]
            )
    print(
        table(
            lines,
            [
                "arch",
                "sd",
                "design",
                "looks (seeds)",
                "equal: better",
                "equal: near",
                "1x margin: near",
                "1x, others -5%: near",
                "3%: better",
                "seeds equal",
                "seeds 1x",
                "seeds 3%",
            ],
        )
    )
    conv = t_conversion(1_600_000 if not args.quick else 200_000)
    result["t_conversion"] = conv
    print("\none sequential t test (O'Brien-Fleming) under its null: crossing rate, plain vs calibrated conversion")
    print(
        table(
            [[",".join(map(str, c["looks"])), c["alpha"], f"{c['plain']:.5f}", f"{c['calibrated']:.5f}"] for c in conv],
            ["looks", "alpha", "plain t conversion", "calibrated"],
        )
    )
    print(f"\n{time.perf_counter() - t0:.1f} s; wrote {save_result('sequential', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
