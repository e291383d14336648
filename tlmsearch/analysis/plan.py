"""Which profiles and seeds a re-evaluation trains: the plan of `tlmsearch verify` (pure).

Short, noisy trials make the search's best trial optimistic (the winner's curse), so the top-k
distinct finished search profiles are trained again with fresh seeds, together with cosine and
uniform at each of their budgets. A (profile, budget, seed) already re-trained with the same
step count is marked done and reused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tlmsearch.analysis.collect import label, profile_baseline, profile_label, ranked
from tlmsearch.rundir.records import finished

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


def choose_profiles(records: Iterable[Any], top_k: int) -> list[tuple[dict[str, Any], int, str | None]]:
    """(profile dict, base width, baseline name) of the `top_k` best distinct finished search
    profiles, then cosine and uniform at each of their budgets (when not already among them)."""
    chosen: list[tuple[dict[str, Any], int, str | None]] = []
    seen: set[tuple[tuple[int, ...], int]] = set()
    for r in ranked(records):
        key = (tuple(r.widths), r.base_width)
        if key in seen:
            continue
        seen.add(key)
        chosen.append((r.profile, key[1], None))
        if len(chosen) >= top_k:
            break
    for base in sorted({c[1] for c in chosen}):
        for name, prof in BASELINES.items():
            if not any(c[1] == base and _baseline_of(c[0]) == name for c in chosen):
                chosen.append((prof, base, name))
    return [(p, b, n or _baseline_of(p)) for p, b, n in chosen]


def _baseline_of(profile: dict[str, Any]) -> str | None:
    name = profile_baseline(profile)
    return name if name in BASELINES else None


def plan(records: Iterable[Any], top_k: int, seeds: list[int], steps: int) -> list[Planned]:
    """Every (profile, seed) to verify; those with a finished verify record of `steps` are marked done."""
    records = list(records)
    done: dict[tuple[str, int, int], str] = {}
    for r in finished(records, kinds=("verify",)):
        if r.max_steps == steps:
            done.setdefault((label(r), r.base_width, r.seed), r.trial_id)
    out = []
    for prof, base, name in choose_profiles(records, top_k):
        text = profile_label(prof)
        for s in seeds:
            out.append(Planned(prof, base, s, name, text, done.get((text, base, s))))
    return out
