"""Re-evaluation with seeds: re-train the top-k profiles of a search and the baselines at full
fidelity with fresh seeds, then judge cosine with seed-paired statistics.

Short, noisy trials make the search's best trial optimistic (the winner's curse). `verify`
therefore trains every chosen profile again with `seeds` new seeds (search seed + 1, + 2, ...,
never the seed the search selected on), in parallel through Ray (`tuning.run_fixed`), appends
the records with kind "verify" to the same run directory, and reuses finished verify records
when run again.

    from tlmsearch.analysis.verify import verify
    result = verify("runs/my-search", top_k=5, seeds=3)
    print(result.verdicts[0].headline)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tlmsearch.analysis.collect import as_dict, finished, label, ranked
from tlmsearch.errors import UserError

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.analysis.verdict import Verdict

BASELINES = {
    "cosine": {"family": "cosine", "params": {"start": 1.5, "end": 0.5}},
    "uniform": {"family": "uniform", "params": {}},
}


@dataclass(frozen=True)
class Planned:
    """One (profile, budget, seed) to re-train, or already re-trained (`done` holds its trial id)."""

    profile: dict[str, Any]  # ProfileSpec dict
    base_width: int
    seed: int
    name: str | None  # baseline name, else None
    label: str
    done: str | None = None


@dataclass(frozen=True)
class VerifyResult:
    run_dir: Path
    planned: list[Planned]
    new_records: list[Any]  # TrialRecords written by this call
    verdicts: list[Verdict]

    @property
    def reused(self) -> int:
        return sum(p.done is not None for p in self.planned)


def choose_profiles(records: list[Any], top_k: int) -> list[tuple[dict[str, Any], int, str | None]]:
    """(profile dict, base width, baseline name) of the `top_k` best distinct finished search
    profiles, then cosine and uniform at each of their budgets (when not already among them)."""
    chosen: list[tuple[dict[str, Any], int, str | None]] = []
    seen: set[tuple[tuple[int, ...], int]] = set()
    for r in ranked(records):
        key = (tuple(r["widths"]), int(r["budget"]["base_width"]))
        if key in seen:
            continue
        seen.add(key)
        chosen.append((r["profile"], key[1], None))
        if len(chosen) >= top_k:
            break
    for base in sorted({c[1] for c in chosen}):
        for name, prof in BASELINES.items():
            if not any(c[1] == base and _is(c[0], name) for c in chosen):
                chosen.append((prof, base, name))
    return [(p, b, n or _baseline_of(p)) for p, b, n in chosen]


def _is(profile: dict[str, Any], name: str) -> bool:
    return _baseline_of(profile) == name


def _baseline_of(profile: dict[str, Any]) -> str | None:
    from tlmsearch.analysis.collect import baseline_name

    name = baseline_name({"profile": profile})
    return name if name in BASELINES else None


def plan(records: list[Any], top_k: int, seeds: list[int], steps: int) -> list[Planned]:
    """Every (profile, seed) to verify; those with a finished verify record of `steps` are marked done."""
    done: dict[tuple[str, int, int], str] = {}
    for r in finished(records, kinds=("verify",)):
        if int(r.get("max_steps", 0)) == steps:
            done.setdefault((label(r), int(r["budget"]["base_width"]), int(r["seed"])), r["trial_id"])
    out = []
    for prof, base, name in choose_profiles(records, top_k):
        text = label({"profile": prof})
        for s in seeds:
            out.append(Planned(prof, base, s, name, text, done.get((text, base, s))))
    return out


def verify(
    study: Any,
    top_k: int = 5,
    seeds: int = 3,
    steps: int | None = None,
    *,
    threshold: float | None = None,
    confidence: float | None = None,
    method: str = "t",
    margin: float | None = None,
    alpha: float | None = None,
    address: str | None = None,
    progress: bool = True,
) -> VerifyResult:
    """Re-train the top-k profiles and the baselines with `seeds` fresh seeds; return the verdicts.

    `study` is a `Study` or a run directory. `steps` overrides the full-fidelity step count.
    `margin` (old name `threshold`) and `alpha` (or `confidence` = 1 - alpha) decide the verdict.
    """
    from tlmsearch.analysis.stats import check_method
    from tlmsearch.analysis.summary import verdicts
    from tlmsearch.analysis.verdict import resolve_levels
    from tlmsearch.profiles import ProfileSpec
    from tlmsearch.tuning import load
    from tlmsearch.tuning.runner import FixedTrial, run_fixed

    if top_k < 1 or seeds < 1:
        raise UserError(f"top_k={top_k} and seeds={seeds} must both be >= 1")
    margin, alpha = resolve_levels(margin, alpha, threshold=threshold, confidence=confidence)
    check_method(method, seeds)  # before any training: the bootstrap needs enough seeds
    if steps is not None and steps < 1:
        raise UserError(f"steps={steps} must be >= 1")
    study = load(study) if isinstance(study, str | Path) else study
    records = [as_dict(r) for r in study.records]
    if not finished(records):
        raise UserError(f"{study.run_dir} has no finished trials (complete, full fidelity): nothing to verify")
    cfg = study.config
    steps = steps or cfg.train.steps
    seed_list = [cfg.seed + 1 + i for i in range(seeds)]
    planned = plan(records, top_k, seed_list, steps)
    todo = [p for p in planned if p.done is None]
    items = [
        FixedTrial(spec=ProfileSpec.from_dict(p.profile), seed=p.seed, base_width=p.base_width, name=p.name)
        for p in todo
    ]
    new = run_fixed(study.run_dir, cfg, items, kind="verify", steps=steps, address=address, progress=progress)
    study = load(study.run_dir)
    all_records = [as_dict(r) for r in study.records]
    wanted = {p.label for p in planned}
    mine = [
        r
        for r in finished(all_records, kinds=("verify",))
        if int(r.get("max_steps", 0)) == steps and int(r["seed"]) in seed_list and label(r) in wanted
    ]
    vs = verdicts(
        mine + finished(all_records),
        margin=margin,
        alpha=alpha,
        arch=cfg.arch,
        kinds=("verify",),
        method=method,
    )
    return VerifyResult(Path(study.run_dir), planned, list(new), vs)
