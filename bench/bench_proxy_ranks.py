"""Where does an early evaluation rank trials as the final one does? (the first rung, grace)

Early stopping keeps a trial only if its loss at a rung is among the best seen there, which is
right only where the ranking at that step predicts the ranking at the end. This benchmark reads
recorded full-length learning curves (trial tables of real runs) and prints, for each
evaluation step s, the Spearman rank correlation between the loss at s and the final loss,
with a bootstrap 95 % interval over curves and the number of curves, per table (one table =
one preset or model shape and one trial length). The recommended first rung is the first step
where the correlation reaches `--level` (0.8 by default); the step where the interval's lower
end reaches it is printed beside it.

Tables read (only curves that reached the full number of steps):

- a run directory's `trials.jsonl` (any `tlmsearch search`, `verify` or `compare` run; the
  preset and steps come from its `search.yaml`), by default `runs/reference/quickstart`;
- `bench/data/sampler_table.json` (benchmark 4's grid, small bench model, 200 steps);
- every `bench/data/proxy-*/` recorded by `--record`.

    python -m bench.bench_proxy_ranks                           # the recorded tables
    python -m bench.bench_proxy_ranks --table runs/my-run       # another run directory too
    python -m bench.bench_proxy_ranks --record bench-small --trials 24   # record a table:
        # random profiles of the default space, no early stopping (real training, minutes)

No timing: the figures are rank correlations of recorded losses, which the machine's load does
not change.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._common import DATA_DIR, print_header, save_result, table

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_RUN = ROOT / "runs" / "reference" / "quickstart"
SAMPLER_TABLE = DATA_DIR / "sampler_table.json"
LEVEL = 0.8
BOOTSTRAP = 2000


@dataclass(frozen=True)
class Curves:
    """Full-length learning curves of one table: `losses[i][j]` is curve i's loss at `steps[j]`."""

    label: str
    steps: tuple[int, ...]
    losses: tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class Row:
    step: int
    spearman: float
    low: float
    high: float
    n: int


# ----------------------------------------------------------------------------- statistics


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    from tlmsearch.profiles import spearman as rank_correlation

    return rank_correlation(a, b)


def bootstrap_interval(
    a: Sequence[float], b: Sequence[float], resamples: int = BOOTSTRAP, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of Spearman's rho, resampling curves (pairs) with
    replacement; resamples whose ranks are all tied on one side (rho undefined) are skipped."""
    rng = random.Random(seed)
    n = len(a)
    values = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        rho = spearman([a[i] for i in idx], [b[i] for i in idx])
        if not math.isnan(rho):
            values.append(rho)
    if not values:
        return (math.nan, math.nan)
    values.sort()
    tail = (1 - level) / 2
    lo = values[min(len(values) - 1, int(tail * len(values)))]
    hi = values[min(len(values) - 1, int((1 - tail) * len(values)))]
    return (lo, hi)


def proxy_table(curves: Curves, resamples: int = BOOTSTRAP, seed: int = 0) -> list[Row]:
    """One row per evaluation step before the last: rho(loss at step, final loss) and its interval."""
    final = [c[-1] for c in curves.losses]
    rows = []
    for j, step in enumerate(curves.steps[:-1]):
        at = [c[j] for c in curves.losses]
        lo, hi = bootstrap_interval(at, final, resamples, seed)
        rows.append(Row(step, spearman(at, final), lo, hi, len(final)))
    return rows


def first_step(rows: Sequence[Row], level: float, field: str = "spearman") -> int | None:
    """The first step whose `field` (spearman or low) reaches `level` and stays there after."""
    for i, row in enumerate(rows):
        if all(getattr(r, field) >= level for r in rows[i:]):
            return row.step
    return None


# ----------------------------------------------------------------------------- tables


def curves_from_run(run_dir: Path) -> Curves:
    """The full-length curves of a run directory's `trials.jsonl` (any kind of trial)."""
    import yaml

    cfg = yaml.safe_load((run_dir / "search.yaml").read_text()) if (run_dir / "search.yaml").is_file() else {}
    losses, steps = [], None
    for line in (run_dir / "trials.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("status") != "complete" or not r.get("full_fidelity") or not r.get("curve"):
            continue
        points = tuple(int(p["step"]) for p in r["curve"])
        steps = steps or points
        if points != steps:
            continue  # another evaluation schedule: not comparable step by step
        losses.append(tuple(float(p["val_loss"]) for p in r["curve"]))
    model = cfg.get("model") or {}
    shape = cfg.get("preset", "?") + "".join(f" {k}={model[k]}" for k in ("d_model", "n_layers") if k in model)
    label = f"{run_dir.name}: {shape}, {steps[-1] if steps else '?'} steps"
    return Curves(label, steps or (), tuple(losses))


def curves_from_sampler_table(path: Path) -> Curves:
    data = json.loads(path.read_text())
    train = data["train"]
    steps = tuple(range(train["eval_interval"], train["steps"] + 1, train["eval_interval"]))
    losses = []
    for p in data["points"]:
        curve = list(p["curve"])
        curve[-1] = p["val_loss"]  # the recorded curve is rounded; the final value is exact
        if len(curve) == len(steps):
            losses.append(tuple(float(v) for v in curve))
    m = data["model"]
    label = f"{path.name}: bench-small (d {m['d_model']}, {m['n_layers']} layers), {train['steps']} steps"
    return Curves(label, steps, tuple(losses))


def default_tables() -> list[Path]:
    tables = [REFERENCE_RUN, SAMPLER_TABLE]
    tables += sorted(p for p in DATA_DIR.glob("proxy-*") if p.is_dir())
    return [p for p in tables if p.exists()]


def load(path: Path) -> Curves:
    return curves_from_sampler_table(path) if path.suffix == ".json" else curves_from_run(path)


# ----------------------------------------------------------------------------- recording


def record(args: argparse.Namespace) -> Path:
    """Train `--trials` random profiles of the default space to full length without early
    stopping, at `--record` (a preset, or "bench-small": the small bench model trained as
    benchmark 3 trains it), and keep the run's trial table in bench/data/proxy-<name>/."""
    from bench._common import SMALL_SHAPE
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.tuning import SearchConfig, search

    small = args.record == "bench-small"
    train = TrainConfig(steps=args.steps, eval_interval=args.eval_interval, threads=1)
    if small:  # benchmark 3's training of the small model
        train = train.replace(warmup_steps=20, batch_size=16, eval_windows=64)
    out = DATA_DIR / f"proxy-{args.record}"
    with tempfile.TemporaryDirectory() as tmp:
        cfg = SearchConfig(
            name="proxy",
            runs_dir=tmp,
            preset="cpu-s" if small else args.record,
            model=dict(SMALL_SHAPE) if small else {},
            sampler="random",
            scheduler="none",
            trials=args.trials,
            seed=args.seed,
            cpus_per_trial=1.0,
            train=train,
            data=DataConfig(corpus=args.corpus),
        )
        import ray

        if not ray.is_initialized():  # a Ray of our own, even where other sessions run theirs
            ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        search(cfg, progress=False)
        out.mkdir(parents=True, exist_ok=True)
        for name in ("search.yaml", "trials.jsonl", "environment.json"):
            shutil.copy(Path(tmp) / "proxy" / name, out / name)
    return out


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", type=Path, action="append", help="a run directory or sampler table (repeatable)")
    ap.add_argument("--level", type=float, default=LEVEL, help="Spearman the first rung must reach")
    ap.add_argument("--resamples", type=int, default=BOOTSTRAP, help="bootstrap resamples")
    ap.add_argument("--record", metavar="PRESET", help="record a table at this preset first (real training)")
    ap.add_argument("--trials", type=int, default=16, help="trials when recording (baselines included)")
    ap.add_argument("--steps", type=int, default=300, help="steps per trial when recording")
    ap.add_argument("--eval-interval", type=int, default=50, help="evaluation interval when recording")
    ap.add_argument("--seed", type=int, default=0, help="sampler and training seed when recording")
    ap.add_argument("--corpus", default="shakespeare")
    ap.add_argument("--out", help="JSON output (default bench/data/proxy-ranks-latest.json)")
    args = ap.parse_args(argv)

    info = print_header("proxy ranks: Spearman(loss at step s, final loss) over recorded full-length curves")
    if args.record:
        print(f"recorded {record(args)}")
    paths = args.table or default_tables()
    result: dict[str, Any] = {"machine": info, "level": args.level, "tables": []}
    for path in paths:
        curves = load(path)
        if len(curves.losses) < 3:
            print(f"\n{curves.label}: {len(curves.losses)} full-length curves, too few to rank", file=sys.stderr)
            continue
        rows = proxy_table(curves, args.resamples)
        point, sure = first_step(rows, args.level), first_step(rows, args.level, "low")
        print(f"\n{curves.label} ({path})")
        print(
            table(
                [(r.step, r.spearman, f"[{r.low:.2f}, {r.high:.2f}]", r.n) for r in rows],
                ["step s", "Spearman", "95% bootstrap", "curves"],
            )
        )
        print(
            f"first rung where Spearman >= {args.level:g} from then on: {point if point else 'none'}; "
            f"where the interval's lower end does: {sure if sure else 'none'}"
        )
        result["tables"].append(
            {
                "label": curves.label,
                "path": str(path),
                "rows": [r.__dict__ for r in rows],
                "first_step_point": point,
                "first_step_lower": sure,
            }
        )
    saved = save_result("proxy-ranks", result, args.out)
    print(f"\nfigures saved to {saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
