"""Where the noise of a verdict comes from, factor by factor, on the cpu-xs Transformer.

Uniform, cosine 1.5 -> 0.5 and linear 1.5 -> 0.5 (one budget) are trained with the same seeds
(keyed initialisation and the seed's data order: the profiles of one seed are paired) in a few
training settings ("cells"), and every finished run is scored several ways:

    cell       what changes against "today" (200 steps ~ 1.3 tokens per parameter, cosine lr)
    today      nothing: the committed study's regime
    t5         5 tokens per non-embedding parameter (cosine lr)
    t5-wsd     5 tokens per parameter, warmup-stable-decay lr
    t5-rep     5 tokens per parameter on a tenth of the training text (each token ~4 times)
    t20        20 tokens per parameter (cosine lr)
    t20-wsd    20 tokens per parameter, warmup-stable-decay lr

    scores     validation windows: 32 (today), 512, all (the whole split, each token once)
               x weights: the last ones, or their exponential moving average (EMA)

Per cell and score: the paired differences d_s = loss(a, s) - loss(b, s) over seeds s, their
mean (the gap) and standard deviation (the paired sd), gap / sd, each profile's own sd over
seeds, the unpaired sd of a difference (sqrt of the sum of both profiles' variances: two
independent runs), paired / unpaired and the seed correlation it implies (`analysis.pairing`),
and the seeds a verdict needs at its 1 % perplexity margin (log 1.01 nats),
n = (2.8 sd / log 1.01)^2 (two-sided 5 %, power 80 %), with CPU seconds per run.

    python -m bench.bench_noise --jobs 1          # train what is missing (resumes), then the table
    python -m bench.bench_noise --analyse         # the table from bench/data/noise-runs.jsonl
    python -m bench.bench_noise --dry             # a smoke test at toy size (writes elsewhere)
    python -m bench.bench_noise --cells today t5 --seeds 0 1 2 3 4 5 --profiles uniform cosine
    python -m bench.bench_noise --pairing runs/reference/study20/transformer ...   # committed records

Each finished run appends one line to bench/data/noise-runs.jsonl; a long run checkpoints
every few minutes under bench/data/noise-ckpt/ and picks up where it stopped, so the command
can be stopped and run again at any time (in a later session too) without losing work.
Runs are ordered so that cheap cells and complete (uniform, cosine) pairs finish first.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shutil
import statistics
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from bench._common import DATA_DIR, machine_info, machine_line, table

RUNS_FILE = DATA_DIR / "noise-runs.jsonl"
CKPT_DIR = DATA_DIR / "noise-ckpt"
REPEAT_DIR = DATA_DIR / "noise-corpus-tenth"
MARGIN_NATS = math.log(1.01)  # the verdict's default margin: 1 % perplexity
Z_SUM = 2.8  # z(0.975) + z(0.80)
PROFILES = {
    "uniform": ("uniform", {}),
    "cosine": ("cosine", {"start": 1.5, "end": 0.5}),
    "linear": ("linear", {"start": 1.5, "end": 0.5}),
}
PAIRS = (("uniform", "cosine"), ("uniform", "linear"), ("cosine", "linear"))
SCORES = tuple(f"{w}/{k}" for w in ("32", "512", "all") for k in ("last", "ema"))
TODAY_SCORE = "32/last"


@dataclasses.dataclass(frozen=True)
class Cell:
    name: str
    steps: int = 0  # fixed steps, or 0 = derived from tokens_per_param
    tokens_per_param: float = 0.0
    schedule: str = "cosine"
    data: str = "shakespeare"  # or "tenth": the first tenth of the training text, same validation

    def n_steps(self, non_embedding: int, tokens_per_step: int) -> int:
        if self.steps:
            return self.steps
        return math.ceil(self.tokens_per_param * non_embedding / tokens_per_step)


CELLS = {
    c.name: c
    for c in (
        Cell("today", steps=200),
        Cell("t5", tokens_per_param=5),
        Cell("t5-wsd", tokens_per_param=5, schedule="wsd"),
        Cell("t5-rep", tokens_per_param=5, data="tenth"),
        Cell("t20", tokens_per_param=20),
        Cell("t20-wsd", tokens_per_param=20, schedule="wsd"),
    )
}
BATCH, LR, EMA_HORIZON = 16, 2e-3, 0.1  # the EMA averages over about the last tenth of the steps


# ----------------------------------------------------------------------------- one run


def _shape(dry: bool) -> Any:
    from tlmsearch.configs.presets import preset

    p = preset("cpu-xs")
    return p.replace(n_layers=3, d_model=32, seq_len=32, base_width=64) if dry else p


def _data_config(cell: Cell, dry: bool, root: Path) -> Any:
    from tlmsearch.core.base import DataConfig

    corpus = "pydoc" if dry else "shakespeare"
    if cell.data == "shakespeare":
        return DataConfig(corpus=corpus)
    return DataConfig(corpus=f"tokens:{_tenth_corpus(corpus, root)}")


def _tenth_corpus(corpus: str, root: Path) -> Path:
    """A token folder with the first tenth of `corpus`'s training tokens and all its validation."""
    import numpy as np

    from tlmsearch.core.base import DataConfig
    from tlmsearch.data import prepare

    folder = root / f"{REPEAT_DIR.name}-{corpus}"
    if (folder / "meta.json").is_file():
        return folder
    data = prepare(DataConfig(corpus=corpus))
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    np.asarray(data.train[: data.train.shape[0] // 10], dtype=np.uint16).tofile(tmp / "train.bin")
    np.asarray(data.val, dtype=np.uint16).tofile(tmp / "val.bin")
    assert data.token_bytes is not None
    meta = {"vocab_size": int(data.vocab_size), "token_bytes": [int(b) for b in data.token_bytes]}
    (tmp / "meta.json").write_text(json.dumps(meta))
    tmp.replace(folder)
    return folder


def run_one(cell_name: str, profile_name: str, seed: int, dry: bool, root: str) -> dict[str, Any]:
    """Train one (cell, profile, seed) and score it every way in SCORES."""
    import resource

    import torch

    from tlmsearch.core.base import TrainConfig
    from tlmsearch.data import gather, prepare, tile_windows, val_windows
    from tlmsearch.models import build_model, count_params
    from tlmsearch.profiles import profile
    from tlmsearch.training.trainer import CHECKPOINT_FILE, resolve_vocab, train, val_nats

    torch.set_num_threads(1)
    cell, shape = CELLS[cell_name], _shape(dry)
    family, params = PROFILES[profile_name]
    widths = profile(family, shape.budget(), **params)
    data_cfg = _data_config(cell, dry, Path(root))
    model_cfg = resolve_vocab(shape.model_config("transformer", widths), data_cfg)
    non_embedding = count_params(model_cfg).non_embedding
    steps = cell.n_steps(non_embedding, BATCH * model_cfg.seq_len)
    if dry:
        steps = min(steps, 12)
    cfg = TrainConfig(
        steps=steps,
        batch_size=BATCH,
        lr=LR,
        schedule=cell.schedule,
        warmup_steps=min(20, steps // 2),
        eval_interval=steps,
        eval_windows=32,
        ema_decay=1.0 - 1.0 / max(2.0, EMA_HORIZON * steps),
        threads=1,
        seed=seed,
    )
    ckpt = Path(root) / CKPT_DIR.name / f"{cell_name}-{profile_name}-{seed}"
    cpu0, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime, time.perf_counter()
    result = train(model_cfg, cfg, data_cfg, checkpoint_dir=ckpt, checkpoint_every_s=300.0)
    train_cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu0
    state = torch.load(ckpt / CHECKPOINT_FILE, weights_only=True)

    data, T = prepare(data_cfg), model_cfg.seq_len
    n_val = data.val.shape[0]
    sets = {
        "32": val_windows(n_val, T, 32),
        "512": val_windows(n_val, T, 512),
        "all": tile_windows(n_val, T),
    }
    model = build_model(model_cfg, seed=seed)
    scores: dict[str, float] = {}
    for weights in ("last", "ema"):
        model.load_state_dict(state["model"])
        if weights == "ema":
            with torch.no_grad():
                for p, e in zip(model.parameters(), state["ema"], strict=True):
                    p.copy_(e)
        for name, starts in sets.items():
            windows = torch.from_numpy(gather(data.val, starts, T))
            scores[f"{name}/{weights}"] = val_nats(model, windows, 64) / (windows.shape[0] * T)
    if not math.isclose(scores["32/ema"], result.metrics["val_loss"], rel_tol=1e-5):
        raise AssertionError(f"re-scored EMA loss {scores['32/ema']} != the trainer's {result.metrics['val_loss']}")
    shutil.rmtree(ckpt, ignore_errors=True)
    return {
        "cell": cell_name,
        "profile": profile_name,
        "seed": seed,
        "dry": dry,
        "steps": steps,
        "schedule": cell.schedule,
        "ema_decay": cfg.ema_decay,
        "widths": list(widths),
        "non_embedding": non_embedding,
        "tokens_per_param": result.metrics["tokens_per_param"],
        "epochs": result.metrics["epochs"],
        "scores": scores,
        "val_tokens": {name: int(len(starts) * T) for name, starts in sets.items()},
        "train_cpu_s": train_cpu,
        "wall_s": time.perf_counter() - t0,
        "torch": torch.__version__,
    }


def _run(args: tuple[str, str, int, bool, str]) -> dict[str, Any]:
    return run_one(*args)


# ----------------------------------------------------------------------------- the plan


def plan(cells: Sequence[str], profiles: Sequence[str], seeds: Sequence[int]) -> list[tuple[str, str, int]]:
    """Every (cell, profile, seed), in the order that gives usable figures soonest: cells by
    cost, within a cell uniform and cosine seed by seed (complete pairs), then the others."""
    first = [p for p in ("uniform", "cosine") if p in profiles]
    rest = [p for p in profiles if p not in first]
    order: list[tuple[str, str, int]] = []
    for group in (first, rest):
        for cell in cells:
            for seed in seeds:
                order += [(cell, p, seed) for p in group]
    return order


def load_runs(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            rows.append(json.loads(line))
    return rows


def run_plan(todo: Sequence[tuple[str, str, int]], jobs: int, dry: bool, out: Path) -> None:
    done = {(r["cell"], r["profile"], r["seed"]) for r in load_runs(out)}
    todo = [t for t in todo if t not in done]
    print(f"{len(done)} runs already in {out}; {len(todo)} to train, {jobs} at a time", flush=True)
    if not todo:
        return
    root = str(out.parent)
    if any(CELLS[c].data == "tenth" for c, _, _ in todo):
        _tenth_corpus("pydoc" if dry else "shakespeare", out.parent)  # once, before the workers
    pending = list(todo)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        running = {}
        while pending or running:
            while pending and len(running) < jobs:
                key = pending.pop(0)
                running[pool.submit(_run, (*key, dry, root))] = key
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                key = running.pop(fut)
                row = fut.result()
                with out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(
                    f"{time.strftime('%H:%M:%S')} {key[0]:7s} {key[1]:8s} seed {key[2]}: "
                    f"{row['steps']} steps, {row['tokens_per_param']:.1f} tok/param, "
                    f"{row['epochs']:.2f} epochs, all/ema {row['scores']['all/ema']:.4f}, "
                    f"{row['train_cpu_s']:.0f} CPU s",
                    flush=True,
                )


# ----------------------------------------------------------------------------- analysis (pure)


@dataclasses.dataclass(frozen=True)
class Row:
    cell: str
    score: str
    pair: tuple[str, str]
    n: int
    gap: float  # mean of loss(a) - loss(b), nats (positive: b is better)
    paired_sd: float  # sd over seeds of the per-seed difference loss(a, s) - loss(b, s)
    sd_a: float  # profile a's own sd over seeds
    sd_b: float  # profile b's own sd over seeds
    seeds_to_decide: float  # (2.8 paired sd / log 1.01)^2
    cpu_s: float  # mean training CPU seconds of one run in the cell

    @property
    def gap_over_sd(self) -> float:
        return self.gap / self.paired_sd if self.paired_sd > 0 else math.nan

    @property
    def unpaired_sd(self) -> float:
        """The sd of a difference of two independent runs, sqrt(sd_a^2 + sd_b^2)."""
        return self._pairing().unpaired_sd

    @property
    def ratio(self) -> float:
        """paired sd / unpaired sd: below 1 when pairing by seed removes spread."""
        return self._pairing().ratio

    @property
    def correlation(self) -> float:
        """The seed correlation of the two profiles' losses (Pearson's r over the seeds)."""
        return self._pairing().correlation

    def _pairing(self) -> Any:
        from tlmsearch.analysis.pairing import Pairing

        return Pairing(self.n, self.sd_a, self.sd_b, self.paired_sd)


def seeds_to_decide(paired_sd: float, margin: float = MARGIN_NATS) -> float:
    return (Z_SUM * paired_sd / margin) ** 2


def analyse(rows: Iterable[dict[str, Any]]) -> list[Row]:
    by_key: dict[tuple[str, str, int], dict[str, Any]] = {}
    for r in rows:
        by_key[(r["cell"], r["profile"], r["seed"])] = r
    out: list[Row] = []
    cells = [c for c in CELLS if any(k[0] == c for k in by_key)]
    for cell in cells:
        cpu = [r["train_cpu_s"] for k, r in by_key.items() if k[0] == cell]
        for a, b in PAIRS:
            seeds = sorted(s for (c, p, s) in by_key if c == cell and p == a and (cell, b, s) in by_key)
            if len(seeds) < 2:
                continue
            for score in SCORES:
                la = [by_key[(cell, a, s)]["scores"][score] for s in seeds]
                lb = [by_key[(cell, b, s)]["scores"][score] for s in seeds]
                d = [x - y for x, y in zip(la, lb, strict=True)]
                sd = statistics.stdev(d)
                out.append(
                    Row(cell, score, (a, b), len(seeds), statistics.fmean(d), sd, statistics.stdev(la),
                        statistics.stdev(lb), seeds_to_decide(sd), statistics.fmean(cpu))
                )  # fmt: skip
    return out


def render(rows: Sequence[Row], pair: tuple[str, str] = ("uniform", "cosine")) -> str:
    today = next((r for r in rows if r.cell == "today" and r.score == TODAY_SCORE and r.pair == pair), None)
    lines = []
    for r in rows:
        if r.pair != pair:
            continue
        vs_today = today.paired_sd / r.paired_sd if today and r.paired_sd > 0 else math.nan
        lines.append(
            [r.cell, r.score, r.n, f"{r.gap:+.4f}", f"{r.sd_a:.4f}", f"{r.sd_b:.4f}", f"{r.unpaired_sd:.4f}",
             f"{r.paired_sd:.4f}", f"{r.ratio:.2f}", f"{r.correlation:+.2f}", f"{r.gap_over_sd:+.2f}",
             f"{r.seeds_to_decide:.0f}", f"{vs_today:.2f}x", f"{r.cpu_s:.0f}"]
        )  # fmt: skip
    headers = ["cell", "score (windows/weights)", "seeds", f"gap {pair[0]}-{pair[1]}", f"sd {pair[0]}",
               f"sd {pair[1]}", "unpaired sd", "paired sd", "paired/unpaired", "seed corr",
               "gap/sd", "seeds to decide (1%)", "paired sd: today / this", "CPU s/run"]  # fmt: skip
    return table(lines, headers)


def pairing_table(run_dirs: Sequence[Path], min_seeds: int = 8) -> tuple[str, dict[str, Any]]:
    """Cosine against every candidate of each committed run's verification (seeds with both
    finished, at least `min_seeds`): the seed correlation and paired / unpaired sd, and a summary."""
    from tlmsearch.analysis.pairing import record_pairings
    from tlmsearch.rundir.study import load

    lines, found = [], []
    for d in run_dirs:
        for c in record_pairings(load(d).records):
            p = c.pairing
            if p.n < min_seeds:
                continue
            found.append(p)
            lines.append([str(d), c.candidate, p.n, f"{p.sd_a:.4f}", f"{p.sd_b:.4f}", f"{p.unpaired_sd:.4f}",
                          f"{p.paired_sd:.4f}", f"{p.ratio:.2f}", f"{p.correlation:+.2f}"])  # fmt: skip
    headers = ["run", "candidate", "seeds", "sd cosine", "sd candidate", "unpaired sd", "paired sd",
               "paired/unpaired", "seed corr"]  # fmt: skip
    r = [p.correlation for p in found]
    q = [p.ratio for p in found]
    summary = {
        "comparisons": len(found),
        "correlation_nonnegative": sum(x >= 0 for x in r),
        "correlation_median": statistics.median(r) if r else None,
        "correlation_range": [min(r), max(r)] if r else None,
        "ratio_median": statistics.median(q) if q else None,
        "ratio_range": [min(q), max(q)] if q else None,
    }
    return table(lines, headers), summary


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", nargs="+", default=list(CELLS), choices=list(CELLS))
    ap.add_argument("--profiles", nargs="+", default=list(PROFILES), choices=list(PROFILES))
    ap.add_argument("--seeds", nargs="+", type=int, default=list(range(6)))
    ap.add_argument("--jobs", type=int, default=1, help="runs at a time, one thread each")
    ap.add_argument("--analyse", action="store_true", help="only the table from the runs file")
    ap.add_argument("--dry", action="store_true", help="toy sizes, at most 12 steps, into a temporary file")
    ap.add_argument("--out", type=Path, default=None, help=f"runs file (default {RUNS_FILE})")
    ap.add_argument("--pairing", nargs="+", type=Path, default=None, metavar="RUN",
                    help="no training: the seed correlation of cosine and each candidate in these run directories' "
                    "verification records (at least 8 seeds), and paired / unpaired sd")  # fmt: skip
    args = ap.parse_args(argv)
    if args.pairing:
        text, summary = pairing_table(args.pairing)
        print(text)
        print(json.dumps(summary))
        return
    out = args.out or (Path("/tmp/tlmsearch-bench-noise/noise-runs.jsonl") if args.dry else RUNS_FILE)
    out.parent.mkdir(parents=True, exist_ok=True)
    print(machine_line(machine_info()))
    if not args.analyse:
        run_plan(plan(args.cells, args.profiles, args.seeds), args.jobs, args.dry, out)
    rows = analyse(load_runs(out))
    for pair in PAIRS:
        if any(r.pair == pair for r in rows):
            print(f"\n{pair[0]} vs {pair[1]}\n")
            print(render(rows, pair))


if __name__ == "__main__":
    main()
