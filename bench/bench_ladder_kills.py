"""SIGKILL `tlmsearch ladder` at random moments, resume it, and compare with an uninterrupted run.

For each of three tiny ladders (two points at 4 layers, one depth and head size, each with its
own profiles and seeds) the bench first runs the ladder once without interruption (the
reference), then runs it again and SIGKILLs the driver's whole session (its local Ray included,
as a crash would leave it) `--kills` times at moments drawn uniformly from the reference's wall
time (the first kill's from all of it, each resume's from its first half: a resume has only what
is left to do), each time going on with `tlmsearch ladder resume` (or `ladder run` again when the
kill came before the ladder's config was written: what a user would do), and lets the last
resume finish. Training is deterministic, so the records must equal the reference's: per (point,
kind, profile, seed) the same validation loss, nothing lost, nothing twice, no run failed that
the reference trained, and the same conclusion.

    python -m bench.bench_ladder_kills                  # 3 ladders x 4 kills
    python -m bench.bench_ladder_kills --kills 2 --ladders 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench._common import print_header, save_result, table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
from cli_runs import kill_group  # noqa: E402  (the tests' kill: the driver's group, then its session)

POINTS = ("tiny:n_layers=4@0.25", "tiny:n_layers=4,d_model=48,n_heads=3,base_width=96@0.25")
LADDERS: tuple[dict[str, Any], ...] = (
    {"name": "k1", "profiles": ["linear:start=1.5,end=0.5"], "seeds": 2, "seed": 0},
    {"name": "k2", "profiles": ["reverse"], "seeds": 2, "seed": 1},
    {"name": "k3", "profiles": ["linear:start=1.5,end=0.5", "bowtie"], "seeds": 3, "seed": 2},
)


def ladder_config(spec: dict[str, Any], runs_dir: Path) -> dict[str, Any]:
    return {
        "name": spec["name"],
        "runs_dir": str(runs_dir),
        "points": list(POINTS),
        "profiles": spec["profiles"],
        "seeds": spec["seeds"],
        "target": "340m",
        "lr_calibration": "off",
        "cpus_per_trial": 2,  # one trial at a time, one thread
        "seed": spec["seed"],
        "train": {"threads": 1, "batch_size": 4, "eval_interval": 20, "eval_windows": 4, "warmup_steps": 2},
        "data": {"corpus": "pydoc"},
    }


def records(run: Path) -> tuple[dict[tuple[str, ...], float], Counter, int]:
    """(point, kind, profile, seed) -> val_loss of every complete record; how often each key
    was recorded; how many records failed."""
    from tlmsearch.rundir.records import read_records

    losses: dict[tuple[str, ...], float] = {}
    seen: Counter = Counter()
    failed = 0
    for sub in sorted(p for p in run.iterdir() if (p / "trials.jsonl").is_file()):
        for r in read_records(sub):
            key = (sub.name, r.kind, json.dumps(r.profile, sort_keys=True), str(r.seed))
            if r.status == "failed":
                failed += 1
                continue
            seen[key] += 1
            losses[key] = round(r.metric("val_loss"), 6)
    return losses, seen, failed


def conclusion(run: Path) -> str:
    path = run / "summary.json"
    return json.loads(path.read_text())["conclusion"] if path.is_file() else ""


def start(args: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    out = open(log, "ab")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen([sys.executable, "-m", "tlmsearch", *args, "--quiet"], env=env, stdout=out,
                            stderr=out, start_new_session=True)  # fmt: skip


def run_to_end(args: list[str], log: Path, timeout: float = 1800) -> float:
    began = time.perf_counter()
    proc = start(args, log)
    if proc.wait(timeout=timeout) != 0:
        raise SystemExit(f"tlmsearch {' '.join(args)} exited {proc.returncode}; see {log}")
    return time.perf_counter() - began


def killed_run(config: Path, run: Path, moments: list[float], log: Path) -> list[str]:
    """The ladder run, SIGKILLed after each of `moments` seconds of its current command, each time
    carried on; the last command runs to its end. What each kill interrupted, in words."""
    what = []
    for delay in [*moments, None]:
        resumable = (run / "ladder.yaml").is_file()
        args = ["ladder", "resume", str(run)] if resumable else ["ladder", "run", "--config", str(config)]
        if delay is None:
            run_to_end(args, log)
            break
        proc = start(args, log)
        try:
            proc.wait(timeout=delay)
            what.append(f"{args[1]} ended before {delay:.0f}s")
        except subprocess.TimeoutExpired:
            kill_group(proc)
            what.append(f"{args[1]} killed at {delay:.0f}s")
    return what


def bench_ladder(spec: dict[str, Any], tmp: Path, kills: int, rng: random.Random) -> dict[str, Any]:
    from tlmsearch.ladders.config import LadderConfig

    ref_dir, cut_dir = tmp / "reference", tmp / "killed"
    for d in (ref_dir, cut_dir):
        d.mkdir(parents=True)
        LadderConfig.from_dict(ladder_config(spec, d)).save(d / "ladder-config.yaml")
    wall = run_to_end(["ladder", "run", "--config", str(ref_dir / "ladder-config.yaml")], tmp / "reference.log")
    # the first kill anywhere in the reference's time; a resume has only what is left to do, so
    # its kill is drawn from the first half (else most resumes end before their moment)
    moments = [rng.uniform(2.0, (0.9 if i == 0 else 0.45) * wall) for i in range(kills)]
    what = killed_run(cut_dir / "ladder-config.yaml", cut_dir / spec["name"], moments, tmp / "killed.log")
    want, _, want_failed = records(ref_dir / spec["name"])
    got, seen, got_failed = records(cut_dir / spec["name"])
    return {
        "ladder": spec["name"],
        "reference_s": round(wall, 1),
        "kills": sum("killed" in w for w in what),
        "moments": what,
        "records": len(want),
        "lost": len(set(want) - set(got)),
        "duplicated": sum(n - 1 for n in seen.values() if n > 1),
        "changed": sum(got[k] != v for k, v in want.items() if k in got),
        "extra": len(set(got) - set(want)),
        "wrongly_failed": max(0, got_failed - want_failed),
        "same_conclusion": conclusion(cut_dir / spec["name"]) == conclusion(ref_dir / spec["name"]) != "",
    }


def main(argv: list[str] | None = None) -> int:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ladders", type=int, default=3, help="how many of the three ladders (default 3)")
    parser.add_argument("--kills", type=int, default=4, help="SIGKILLs per ladder (default 4)")
    parser.add_argument("--seed", type=int, default=50, help="seed of the kill moments (default 50)")
    parser.add_argument("--out", default=None, help="where the JSON figures go")
    args = parser.parse_args(argv)
    info = print_header(f"ladder SIGKILL and resume: {args.ladders} ladders x {args.kills} kills")
    rng = random.Random(args.seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-ladder-kills-") as tmp:
        for spec in LADDERS[: args.ladders]:
            row = bench_ladder(spec, Path(tmp) / spec["name"], args.kills, rng)
            rows.append(row)
            print("  " + row["ladder"] + ": " + "; ".join(row["moments"]), flush=True)
    headers = ["ladder", "reference s", "kills", "records", "lost", "duplicated", "changed", "extra",
               "wrongly failed", "same conclusion"]  # fmt: skip
    keys = ["ladder", "reference_s", "kills", "records", "lost", "duplicated", "changed", "extra", "wrongly_failed",
            "same_conclusion"]  # fmt: skip
    print(table([[r[k] for k in keys] for r in rows], headers))
    bad = sum(r["lost"] + r["duplicated"] + r["changed"] + r["extra"] + r["wrongly_failed"] for r in rows)
    bad += sum(not r["same_conclusion"] for r in rows)
    print(f"kills: {sum(r['kills'] for r in rows)}; defects: {bad}")
    path = save_result("ladder_kills", {"machine": info, "seed": args.seed, "results": rows}, args.out)
    print(f"figures: {path}")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
