"""Common random numbers: how much does keyed initialisation shrink the paired spread of
(uniform - cosine) across seeds?

For each seed, the uniform and the cosine (1.5x -> 0.5x) profiles of one budget are trained
with the same data order, once with each init mode of `build_model`: "stream" (one RNG stream
in module order, the old behaviour) and "keyed" (common random numbers, the default). Per mode
the paired differences d_s = val_loss(uniform, s) - val_loss(cosine, s) are formed; the figure
is the ratio of their standard deviations, sd_stream / sd_keyed, with two 95% intervals:

- Pitman-Morgan: exact under normality for PAIRED samples (both modes share the seeds, hence
  the data order, so their differences may be correlated): the interval is every ratio lambda
  for which corr(d_stream + lambda d_keyed, d_stream - lambda d_keyed) is not significant;
- F: the textbook interval for two independent samples (df n-1, n-1), for comparison.

With a handful of seeds either interval is wide: a sd ratio from 5 pairs is known to within a
factor of about 2.5 either way.

    python -m bench.bench_crn --seeds 0 1 2 3 4 5 --steps 300 --jobs 2   # what made bench/README.md's figures
    python -m bench.bench_crn --analyse bench/data/crn-trials.jsonl      # the table again from the trials
    python -m bench.bench_crn --dry                                      # smoke test, measures nothing
    python -m bench.bench_crn --run-dir runs/my-search --seeds 1 2 3 4 5 6 --jobs 2

With --run-dir the keyed side is read from a run's verify records of uniform and cosine (the
default init since keyed init exists) and only their stream twins train: the same model,
training and data configs as each record, with `TrainConfig.init = "stream"`. A verify at the
real shape then measures the effect at the cost of half the trials.

Trials append to a JSON-lines file as they finish, so an interrupted run keeps what it did.
The init mode is `TrainConfig.init`; everything else is the trainer's normal path at `threads=1`.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import DATA_DIR, print_header, save_result, small_preset, table

MODES = ("stream", "keyed")
PROFILES = ("cosine", "uniform")


def run_trial(seed: int, profile_name: str, init: str, steps: int, dry: bool) -> dict[str, Any]:
    """Train one (seed, profile, init mode) trial on the small search model; its final metrics."""
    import torch

    import tlmsearch.training.trainer as trainer
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.profiles import profile

    torch.set_num_threads(1)
    p = small_preset()
    if dry:
        p = p.replace(n_layers=2, d_model=32, seq_len=32, base_width=64)
    widths = profile("cosine", p.budget()) if profile_name == "cosine" else p.uniform_widths()
    cfg = TrainConfig(
        steps=steps,
        batch_size=16,
        warmup_steps=min(20, steps // 2),
        eval_interval=steps,
        eval_windows=8 if dry else 64,
        threads=1,
        seed=seed,
        init=init,
    )
    t0 = time.perf_counter()
    result = trainer.train(p.model_config("transformer", widths), cfg, DataConfig(corpus="shakespeare"))
    return {
        "seed": seed,
        "profile": profile_name,
        "init": init,
        "steps": steps,
        "widths": list(widths),
        "val_loss": result.metrics["val_loss"],
        "seconds": time.perf_counter() - t0,
    }


def _run(args: tuple[int, str, str, int, bool]) -> dict[str, Any]:
    return run_trial(*args)


def keyed_rows(run_dir: Path) -> list[dict[str, Any]]:
    """Rows (as `run_trial` writes them) of a run's finished keyed-init verify records of
    uniform and cosine 1.5 -> 0.5, each with the configs it was trained with."""
    from tlmsearch.analysis.collect import label
    from tlmsearch.rundir.records import finished
    from tlmsearch.rundir.study import load

    names = {"uniform": "uniform", "cosine:start=1.5,end=0.5": "cosine"}
    rows = []
    for r in finished(load(run_dir).records, kinds=("verify",)):
        name = names.get(label(r))
        if name is None or not r.train or r.train.get("init", "keyed") != "keyed":
            continue
        rows.append(
            {
                "seed": r.seed,
                "profile": name,
                "init": "keyed",
                "steps": r.steps,
                "widths": list(r.widths),
                "val_loss": r.metrics["val_loss"],
                "seconds": r.wall_s,
                "configs": {"model": r.model, "train": r.train, "data": r.data},
            }
        )
    return rows


def run_twin(row: dict[str, Any]) -> dict[str, Any]:
    """Train the stream-init twin of a keyed row read by `keyed_rows`."""
    import torch

    from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
    from tlmsearch.training.trainer import train

    torch.set_num_threads(1)
    c = row["configs"]
    cfg = TrainConfig.from_dict({**c["train"], "init": "stream", "threads": 1})
    t0 = time.perf_counter()
    result = train(ModelConfig.from_dict(c["model"]), cfg, DataConfig.from_dict(c["data"]))
    return {**row, "init": "stream", "val_loss": result.metrics["val_loss"], "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------------------- analysis (pure)


def paired_differences(rows: Sequence[dict[str, Any]]) -> dict[str, dict[int, float]]:
    """{init mode: {seed: val_loss(uniform) - val_loss(cosine)}} over seeds that have both."""
    loss = {(r["init"], r["seed"], r["profile"]): float(r["val_loss"]) for r in rows}
    out: dict[str, dict[int, float]] = {m: {} for m in MODES}
    for mode, seed, prof in loss:
        if prof == "uniform" and (mode, seed, "cosine") in loss:
            out[mode][seed] = loss[(mode, seed, "uniform")] - loss[(mode, seed, "cosine")]
    return out


def f_interval(sd_a: float, sd_b: float, n_a: int, n_b: int, level: float = 0.95) -> tuple[float, float]:
    """Interval for sd_a / sd_b from two independent normal samples (F distribution)."""
    from scipy import stats

    ratio2 = (sd_a / sd_b) ** 2
    q = (1 - level) / 2
    lo = ratio2 / stats.f.ppf(1 - q, n_a - 1, n_b - 1)
    hi = ratio2 / stats.f.ppf(q, n_a - 1, n_b - 1)
    return math.sqrt(lo), math.sqrt(hi)


def pitman_morgan_interval(
    a: np.ndarray, b: np.ndarray, level: float = 0.95, points: int = 6001
) -> tuple[float, float]:
    """Interval for sd(a) / sd(b) from paired normal samples: the ratios lambda at which the
    Pitman-Morgan test (correlation of a + lambda b with a - lambda b, t with n-2 df) keeps
    the null sd(a) = lambda sd(b). Solved on a fine log grid (the test's p-value is unimodal
    in lambda); `points` grid points over [1e-3, 1e3]."""
    from scipy import stats

    n = len(a)
    grid = np.exp(np.linspace(math.log(1e-3), math.log(1e3), points))
    u = a[None, :] + grid[:, None] * b[None, :]  # (G, n)
    v = a[None, :] - grid[:, None] * b[None, :]  # (G, n)
    uc, vc = u - u.mean(1, keepdims=True), v - v.mean(1, keepdims=True)
    r = (uc * vc).sum(1) / np.sqrt((uc**2).sum(1) * (vc**2).sum(1))
    t = r * np.sqrt((n - 2) / np.clip(1 - r**2, 1e-300, None))
    p = 2 * stats.t.sf(np.abs(t), n - 2)
    kept = grid[p > 1 - level]
    if kept.size == 0:
        return float("nan"), float("nan")
    return float(kept.min()), float(kept.max())


def crn_summary(rows: Sequence[dict[str, Any]], level: float = 0.95) -> dict[str, Any]:
    """Per mode: n, mean and sd of the paired differences; then the sd ratio stream/keyed over
    the seeds both modes have, with its Pitman-Morgan and F intervals."""
    diffs = paired_differences(rows)
    per_mode = {}
    for mode, by_seed in diffs.items():
        x = np.array(list(by_seed.values()))
        per_mode[mode] = {
            "n": int(x.size),
            "mean": float(x.mean()) if x.size else float("nan"),
            "sd": float(x.std(ddof=1)) if x.size > 1 else float("nan"),
            "diffs": {str(s): d for s, d in sorted(by_seed.items())},
        }
    seeds = sorted(set(diffs["stream"]) & set(diffs["keyed"]))
    out: dict[str, Any] = {"level": level, "modes": per_mode, "paired_seeds": seeds}
    if len(seeds) >= 3:
        a = np.array([diffs["stream"][s] for s in seeds])
        b = np.array([diffs["keyed"][s] for s in seeds])
        sa, sb = float(a.std(ddof=1)), float(b.std(ddof=1))
        out["sd_ratio"] = sa / sb
        out["pitman_morgan"] = pitman_morgan_interval(a, b, level)
        out["f_independent"] = f_interval(sa, sb, len(a), len(b), level)
        out["corr_stream_keyed"] = float(np.corrcoef(a, b)[0, 1])
    return out


def print_summary(s: dict[str, Any]) -> None:
    rows = [
        (mode, m["n"], m["mean"], m["sd"], " ".join(f"{d:+.4f}" for d in m["diffs"].values()))
        for mode, m in s["modes"].items()
    ]
    print(table(rows, ["init", "seeds", "mean(uni-cos)", "sd(uni-cos)", "per-seed differences (nats)"]))
    if "sd_ratio" in s:
        pct = round(100 * s["level"])
        pm, f = s["pitman_morgan"], s["f_independent"]
        print(
            f"sd ratio stream/keyed over {len(s['paired_seeds'])} paired seeds: {s['sd_ratio']:.2f}  "
            f"({pct}% Pitman-Morgan [{pm[0]:.2f}, {pm[1]:.2f}]; "
            f"F as if independent [{f[0]:.2f}, {f[1]:.2f}]); "
            f"corr of the two modes' differences {s['corr_stream_keyed']:+.2f}"
        )


# ---------------------------------------------------------------------------- driver


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=1, help="trials at once (1 thread each)")
    ap.add_argument("--trials", type=Path, default=DATA_DIR / "crn-trials.jsonl", help="JSON lines, appended")
    ap.add_argument("--analyse", type=Path, help="only print the table of this trials file")
    ap.add_argument("--dry", action="store_true", help="tiny model, few steps: a smoke test")
    ap.add_argument("--run-dir", type=Path, help="read the keyed side from this run's verify records")
    a = ap.parse_args(argv)

    if a.analyse:
        rows = [json.loads(line) for line in a.analyse.read_text().splitlines() if line.strip()]
        print_summary(crn_summary(rows))
        return
    info = print_header("common random numbers: paired spread of uniform - cosine, stream vs keyed init")
    steps = 4 if a.dry else a.steps
    trials = a.trials if not a.dry else a.trials.with_name("crn-dry.jsonl")
    trials.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    if a.run_dir:
        keyed = [r for r in keyed_rows(a.run_dir) if r["seed"] in a.seeds]
        both = {r["seed"] for r in keyed if r["profile"] == "uniform"} & {
            r["seed"] for r in keyed if r["profile"] == "cosine"
        }
        keyed = [r for r in keyed if r["seed"] in both]
        print(f"{a.run_dir}: keyed verify records of uniform and cosine at seeds {sorted(both)}", flush=True)
        rows.extend(keyed)
        with trials.open("a") as fh:  # the trials file alone reproduces the table (--analyse)
            fh.writelines(json.dumps(r) + "\n" for r in keyed)
        steps = keyed[0]["steps"] if keyed else steps
        run, jobs = run_twin, keyed
    else:
        run, jobs = _run, [(s, prof, mode, steps, a.dry) for s in a.seeds for mode in MODES for prof in PROFILES]
    with ProcessPoolExecutor(max_workers=a.jobs) as pool:
        for row in pool.map(run, jobs):
            rows.append(row)
            with trials.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(
                f"seed {row['seed']} {row['profile']:>7} {row['init']:>6}: val_loss {row['val_loss']:.4f} "
                f"({row['seconds']:.0f} s)",
                flush=True,
            )
    summary = crn_summary(rows)
    print_summary(summary)
    if not a.dry:
        print(f"wrote {save_result('crn', {'machine': info, 'steps': steps, 'trials': rows, 'summary': summary})}")


if __name__ == "__main__":
    main()
