"""The random-search control of a study (pure): the best profile that random search found within
the same number of trials as the architecture's own search.

A sampler earns its keep only if it finds better profiles than random sampling on the same
budget of trials. A study with `random_control` runs, per architecture, a companion search with
the random sampler, the same seed, the same trial fidelity and scheduler, and the same number of
trials. Its first trials would be the same baselines, trained at the same seed with the same
settings as in the main search (identical runs), so the companion does not train them again:
it runs `trials - baselines` random profiles, and its pool is those plus the main search's
baseline records. Its best by search-time val_loss is re-trained by `verify` as the named
control `RANDOM_BEST`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from tlmsearch.analysis.collect import label
from tlmsearch.noise_floor import NoiseFloor, in_sd, is_tie
from tlmsearch.rundir.records import TrialRecord, as_records, finished

RANDOM_BEST = "random-best"


def random_best(random_records: Iterable[Any], search_records: Iterable[Any]) -> TrialRecord | None:
    """The best finished trial of the companion's pool: its own trials and the main search's
    baselines (None when neither finished any)."""
    pool = finished(random_records) + [r for r in finished(search_records) if r.kind == "baseline"]
    return min(pool, key=lambda r: r.metric("val_loss")) if pool else None


def control_summary(
    random_records: Iterable[Any],
    search_records: Iterable[Any],
    verdict: dict[str, Any] | None,
    floor: NoiseFloor | None,
) -> dict[str, Any] | None:
    """The control as plain data: random search's best (label, search-time val_loss, whether it
    is a shared baseline), the main search's best, their gap in the floor's units and whether it
    is a tie, and the verified row of the random best when the verification has it."""
    own = finished(as_records(search_records))
    best = random_best(random_records, own)
    if best is None:
        return None
    main = min(own, key=lambda r: r.metric("val_loss")) if own else None
    sd = floor.sd if floor is not None and floor.usable else math.nan
    gap = best.metric("val_loss") - main.metric("val_loss") if main is not None else math.nan
    text = label(best)
    row = next((r for r in (verdict or {}).get("table", []) if r.get("label") == text), None)
    return {
        "label": text,
        "profile": dict(best.profile),
        "widths": list(best.widths),
        "search_val_loss": best.metric("val_loss"),
        "is_shared_baseline": best.kind == "baseline",
        "random_trials": len(finished(random_records)),
        "search_best": label(main) if main is not None else None,
        "search_best_val_loss": main.metric("val_loss") if main is not None else None,
        # random's best minus the sampler's best, search-time val_loss (positive: the sampler found lower)
        "gap": gap,
        "gap_sd": in_sd(gap, sd),
        "tie": is_tie(gap, sd),
        "verified": row,
    }
