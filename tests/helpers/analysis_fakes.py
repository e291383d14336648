"""Synthetic trial records with a known answer, for the analysis, plot and report tests."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np

from tlmsearch.configs.presets import preset
from tlmsearch.profiles import Budget, ProfileSpec, shape_stats
from tlmsearch.rundir.records import RUN_LAYOUT

BUDGET = Budget(n_layers=4, base_width=64, multiple_of=8)


def record(
    trial_id: str,
    spec: str,
    loss: float,
    *,
    kind: str = "sampled",
    seed: int = 0,
    status: str = "complete",
    budget: Budget = BUDGET,
    params: dict[str, Any] | None = None,
    baseline: str | None = None,
    max_steps: int = 40,
) -> dict[str, Any]:
    ps = ProfileSpec.parse(spec)
    widths = ps.widths(budget)
    steps = max_steps if status == "complete" else max_steps // 2
    curve = [{"step": s, "val_loss": loss + 2.0 * (1 - s / max_steps) ** 2} for s in range(10, steps + 1, 10)]
    params_total = 3 * 32 * sum(widths) + 10_000
    return {
        "trial_id": trial_id,
        "number": -1,
        "kind": kind,
        "baseline": baseline,
        "status": status,
        "reason": None,
        "params": params or {},
        "profile": ps.to_dict(),
        "widths": list(widths),
        "budget": budget.to_dict(),
        "shape": shape_stats(widths).to_dict(),
        "seed": seed,
        "steps": steps,
        "max_steps": max_steps,
        "full_fidelity": status == "complete",
        "curve": curve,
        "metrics": {
            "val_loss": curve[-1]["val_loss"],
            "val_ppl": math.exp(curve[-1]["val_loss"]),
            "val_bpb": curve[-1]["val_loss"] / math.log(2),
            "tokens_per_s": 1000.0 + len(trial_id),
            "params_total": params_total,
        }
        if curve
        else {},
        "started_at": None,
        "ended_at": None,
        "wall_s": 1.0,
    }


# true quality of each profile (val_loss); knots:k0=3,k1=1 is clearly better than cosine
TRUE = {
    "uniform": 2.30,
    "cosine:start=1.5,end=0.5": 2.25,
    "knots:k0=3,k1=1": 2.15,
    "knots:k0=1,k1=1.2": 2.31,
    "linear:start=1.2,end=0.8": 2.27,
}


def search_records(noise: float = 0.02, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = [
        record("b0", "uniform", TRUE["uniform"] + rng.gauss(0, noise), kind="baseline", baseline="uniform"),
        record(
            "b1",
            "cosine:start=1.5,end=0.5",
            TRUE["cosine:start=1.5,end=0.5"] + rng.gauss(0, noise),
            kind="baseline",
            baseline="cosine:start=1.5,end=0.5",
        ),
    ]
    for i, spec in enumerate(["knots:k0=3,k1=1", "knots:k0=1,k1=1.2", "linear:start=1.2,end=0.8"]):
        p = ProfileSpec.parse(spec).params
        out.append(record(f"s{i}", spec, TRUE[spec] + rng.gauss(0, noise), params=dict(p)))
    out.append(record("s9", "knots:k0=0.5,k1=2", 2.6, status="stopped", params={"k0": 0.5, "k1": 2.0}))
    return out


def verify_records(
    spread: float = 0.1, noise: float = 0.003, seeds: int = 3, winner_gain: float | None = None
) -> list[dict[str, Any]]:
    """Seed-paired re-evaluations: a shared per-seed offset plus small independent noise."""
    rng = random.Random(1)
    offsets = [rng.gauss(0, spread) for _ in range(seeds)]
    truth = dict(TRUE)
    if winner_gain is not None:  # make the winner exactly this much better than cosine in loss
        truth["knots:k0=3,k1=1"] = truth["cosine:start=1.5,end=0.5"] - winner_gain
    out = []
    for spec, loss in truth.items():
        for s in range(seeds):
            base = "uniform" if spec == "uniform" else ("cosine" if spec.startswith("cosine") else None)
            out.append(
                record(
                    f"v-{spec}-{s}", spec, loss + offsets[s] + rng.gauss(0, noise), kind="verify", seed=s, baseline=base
                )
            )
    return out


def verify_trials(**kw: Any) -> list[Any]:
    """`verify_records(**kw)` read as `TrialRecord`s, as a run directory's records are."""
    from tlmsearch.rundir.records import TrialRecord

    return [TrialRecord.from_dict(d) for d in verify_records(**kw)]


def write_run(run_dir: Path, records: list[dict[str, Any]], arch: str = "transformer") -> Path:
    """`records` as a run directory of the current layout: each record that trained and holds no
    model gets the one it trained (the tiny preset with 4 layers at its widths, `arch`)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    shape = preset("tiny").replace(n_layers=4)
    with (run_dir / "trials.jsonl").open("w") as f:
        for r in records:
            if r.get("widths") and not r.get("model"):
                r = {**r, "model": shape.model_config(arch, tuple(r["widths"])).to_dict()}
            f.write(json.dumps({**r, "layout": RUN_LAYOUT}) + "\n")
    # the tiny preset with 4 layers: the shape of BUDGET, so exports build a valid model
    (run_dir / "search.yaml").write_text(f"arch: {arch}\npreset: tiny\nmodel: {{n_layers: 4}}\n")
    return run_dir


def seed_by_seed_t(looks: tuple[int, ...], n_paths: int, seed: int) -> np.ndarray:
    """(n_paths, len(looks)) paired t statistics of null studies drawn seed by seed from standard
    normal gains: an independent route to the law `sequential_bounds.null_t_paths` draws stage
    by stage."""
    x = np.random.default_rng(seed).normal(size=(n_paths, looks[-1]))
    out = []
    for n in looks:
        d = x[:, :n]
        out.append(d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n)))
    return np.stack(out, axis=1)
