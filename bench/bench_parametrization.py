"""Does the ranking of uniform vs cosine 1.5 -> 0.5 depend on the learning rate, under the
standard and the width-aware (muP-style) parametrisation?

On the cpu-xs Transformer (Shakespeare, bytes), uniform and cosine 1.5 -> 0.5 of one budget are
trained with the same seeds (keyed init and the seed's data order: the two profiles of a seed
are paired) at peak learning rates 1e-3, 2e-3 and 4e-3, each under `parametrization` "standard"
and "width" (`tlmsearch.models.parametrization`). The uniform profile has every multiplier 1
under "width", so it trains bit for bit as under "standard" (tests/unit/models/
test_parametrization.py proves it) and is trained once per (seed, lr).

Per (parametrization, lr): mean validation loss of each profile, the paired gap
d_s = loss(uniform, s) - loss(cosine, s) (> 0: cosine is better), its mean, paired sd and
mean / (sd / sqrt(n)), and the sign of d_s seed by seed. The ranking "depends on the rate"
when the sign of the mean gap differs between learning rates of one parametrisation.

    python -m bench.bench_parametrization            # train what is missing (resumes), then the table
    python -m bench.bench_parametrization --analyse  # the table from bench/data/parametrization-runs.jsonl
    python -m bench.bench_parametrization --dry      # a smoke test at toy size (writes elsewhere)

One training process at a time, one thread. Each finished run appends one line to
bench/data/parametrization-runs.jsonl; runs are ordered seed by seed (every rate and both
parametrisations of seed 0 first), so a stopped command leaves complete seeds behind.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._common import DATA_DIR, machine_info, machine_line, table

RUNS_FILE = DATA_DIR / "parametrization-runs.jsonl"
PROFILES = {"uniform": ("uniform", {}), "cosine": ("cosine", {"start": 1.5, "end": 0.5})}
LRS = (1e-3, 2e-3, 4e-3)
PARAMETRIZATIONS = ("standard", "width")
SEEDS = (0, 1, 2)
STEPS, BATCH, FINAL_WINDOWS = 300, 16, 512
# two-sided 95 % t quantiles by degrees of freedom (no scipy at import)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def run_one(profile_name: str, seed: int, lr: float, parametrization: str, dry: bool) -> dict[str, Any]:
    """Train one (profile, seed, lr, parametrization) and return its row."""
    import resource

    import torch

    from tlmsearch.configs.presets import preset
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.profiles import profile
    from tlmsearch.training.trainer import resolve_vocab, train

    torch.set_num_threads(1)
    shape = preset("cpu-xs")
    if dry:
        shape = shape.replace(n_layers=3, d_model=32, seq_len=32, base_width=64)
    family, params = PROFILES[profile_name]
    widths = profile(family, shape.budget(), **params)
    data_cfg = DataConfig(corpus="pydoc" if dry else "shakespeare")
    model_cfg = resolve_vocab(shape.model_config("transformer", widths), data_cfg)
    steps = 12 if dry else STEPS
    cfg = TrainConfig(
        steps=steps,
        batch_size=BATCH,
        lr=lr,
        warmup_steps=min(20, steps // 2),
        eval_interval=steps,
        eval_windows=32,
        final_eval_windows=FINAL_WINDOWS,
        threads=1,
        seed=seed,
        parametrization=parametrization,
    )
    cpu0, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime, time.perf_counter()
    result = train(model_cfg, cfg, data_cfg)
    return {
        "profile": profile_name,
        "seed": seed,
        "lr": lr,
        "parametrization": parametrization,
        "dry": dry,
        "steps": steps,
        "widths": list(widths),
        "val_loss": result.metrics["val_loss"],
        "val_tokens": result.metrics["val_tokens"],
        "train_loss": result.metrics["train_loss"],
        "tokens_per_param": result.metrics["tokens_per_param"],
        "cpu_s": resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu0,
        "wall_s": time.perf_counter() - t0,
        "torch": torch.__version__,
    }


def plan(seeds: Sequence[int], lrs: Sequence[float]) -> list[tuple[str, int, float, str]]:
    """Every run, seed by seed, rate by rate: uniform once (it is the same under both
    parametrisations), then cosine standard, cosine width."""
    order = []
    for seed in seeds:
        for lr in lrs:
            order += [
                ("uniform", seed, lr, "standard"),
                ("cosine", seed, lr, "standard"),
                ("cosine", seed, lr, "width"),
            ]
    return order


def load_runs(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _key(r: dict[str, Any]) -> tuple[str, int, float, str]:
    return (r["profile"], int(r["seed"]), float(r["lr"]), r["parametrization"])


def run_plan(todo: Sequence[tuple[str, int, float, str]], dry: bool, out: Path) -> None:
    done = {_key(r) for r in load_runs(out)}
    out.parent.mkdir(parents=True, exist_ok=True)
    for item in todo:
        if item in done:
            continue
        row = run_one(*item, dry=dry)
        with out.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(
            f"{item}: val_loss {row['val_loss']:.4f}  ({row['cpu_s']:.0f} s CPU, {row['wall_s']:.0f} s wall)",
            flush=True,
        )


def _loss(runs: dict[tuple[str, int, float, str], float], profile: str, seed: int, lr: float, par: str) -> float | None:
    if profile == "uniform":
        par = "standard"  # every multiplier is 1: the same run
    return runs.get((profile, seed, lr, par))


def analyse(rows: Sequence[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The table (text) and its figures: per (parametrization, lr) the paired gaps."""
    runs = {_key(r): float(r["val_loss"]) for r in rows}
    seeds = sorted({int(r["seed"]) for r in rows})
    lrs = sorted({float(r["lr"]) for r in rows})
    figures: dict[str, Any] = {}
    lines = []
    for par in PARAMETRIZATIONS:
        for lr in lrs:
            pairs = [
                (s, u, c)
                for s in seeds
                if (u := _loss(runs, "uniform", s, lr, par)) is not None
                and (c := _loss(runs, "cosine", s, lr, par)) is not None
            ]
            if not pairs:
                continue
            gaps = [u - c for _, u, c in pairs]
            mean = statistics.fmean(gaps)
            sd = statistics.stdev(gaps) if len(gaps) > 1 else float("nan")
            t = mean / (sd / math.sqrt(len(gaps))) if len(gaps) > 1 and sd > 0 else float("nan")
            half = T975.get(len(gaps) - 1, 1.96) * sd / math.sqrt(len(gaps)) if len(gaps) > 1 else float("nan")
            decided = "+" if mean - half > 0 else "-" if mean + half < 0 else "?"  # the 95 % interval's side
            signs = "".join("+" if g > 0 else "-" if g < 0 else "0" for g in gaps)
            figures[f"{par}/{lr:g}"] = {
                "n": len(gaps), "gaps": gaps, "mean": mean, "sd": sd, "t": t, "ci95": half, "decided": decided
            }  # fmt: skip
            lines.append(
                [
                    par,
                    f"{lr:g}",
                    len(gaps),
                    statistics.fmean(u for _, u, _ in pairs),
                    statistics.fmean(c for _, _, c in pairs),
                    f"{mean:+.4f}",
                    f"{sd:.4f}",
                    f"{t:+.1f}",
                    f"[{mean - half:+.4f}, {mean + half:+.4f}]",
                    decided,
                    signs,
                ]
            )
    headers = ["param.", "lr", "seeds", "uniform", "cosine", "gap u-c", "paired sd", "t", "95% CI", "decided", "signs"]
    verdicts = []
    for par in PARAMETRIZATIONS:
        means = {k: v["mean"] for k, v in figures.items() if k.startswith(par + "/")}
        if len(means) > 1:
            flips = len({m > 0 for m in means.values()}) > 1
            sides = {v["decided"] for k, v in figures.items() if k.startswith(par + "/")} - {"?"}
            verdicts.append(
                f"{par}: the sign of the mean gap {'CHANGES' if flips else 'does not change'} with the rate; "
                f"95 % intervals on opposite sides of 0 at two rates: {'yes' if len(sides) > 1 else 'no'}"
            )
    best = {}
    for par in PARAMETRIZATIONS:
        for prof in PROFILES:
            by_lr = {}
            for lr in lrs:
                vals = [v for s in seeds if (v := _loss(runs, prof, s, lr, par)) is not None]
                if vals:
                    by_lr[lr] = statistics.fmean(vals)
            if by_lr:
                best[f"{par}/{prof}"] = min(by_lr, key=by_lr.__getitem__)
    text = table(lines, headers) + "\n" + "\n".join(verdicts)
    text += "\nbest rate (mean loss): " + ", ".join(f"{k} {v:g}" for k, v in best.items())
    figures["best_lr"] = best
    return text, figures


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--analyse", action="store_true", help="only print the table from the runs file")
    ap.add_argument("--dry", action="store_true", help="toy size, written to /tmp (a smoke test)")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--lrs", type=float, nargs="+", default=list(LRS))
    ap.add_argument("--out", type=Path, default=None, help=f"runs file (default {RUNS_FILE})")
    args = ap.parse_args(argv)
    out = args.out or (Path("/tmp/tlmsearch-bench-parametrization-dry.jsonl") if args.dry else RUNS_FILE)
    if not args.analyse:
        print(machine_line(machine_info()), flush=True)
        run_plan(plan(args.seeds, args.lrs), args.dry, out)
    text, _ = analyse([r for r in load_runs(out) if bool(r.get("dry")) == args.dry])
    print(text)


if __name__ == "__main__":
    main()
