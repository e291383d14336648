"""Fixed trials trained as packs (`--pack auto|on` of verify and its rate check, compare, the
noise floor, a study's transfer; issue 29): the trials of one shape (profiles x seeds of one
budget) side by side in one process, one Ray task per pack.

    records = run_trials(run_dir, cfg, items, "verify", pack="auto")

`run_trials` groups `items` by shape and rate, asks `pack.auto.choose` per group which packs
they form on the slots Ray runs trials at once (`on`: all of them, at least one pack a slot;
`auto`: packs of a size measured faster, where that beats separate trials), trains the packs
as Ray tasks holding one trial's resources each (`cpus_per_trial`, `gpus_per_trial`;
`tuning.pack_runs`), and the rest as separate trials (`run_fixed`, today's path).

Each member is a `TrialSpec` resolved on the driver (`specs.spec_of`, as a separate trial's
is); a pack's Ray task gets the members' specs and trains exactly them, and returns each
member's `TrialOutcome` (curve, final metrics with parameter counts, placement), the one a Ray
trial reports. Each member becomes one record in `trials.jsonl`, `recorder.record_of(spec,
outcome)` as for a separate trial, so a packed record has exactly the fields of an unpacked
one; its numbers are those of the trial trained alone, up to summation order (float64: ~1e-15;
float32: see tests/unit/pack). Its throughput metrics are its own tokens over the pack's
training time and its `wall_s` the pack's. The driver appends each member's record as soon as
its pack returns, member by member: a driver killed midway leaves the members recorded so far,
`verify` run again reuses them (its plan skips recorded trials) and packs only the members not
recorded. Packs keep no checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.verify import check_pack
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.fixed import FixedTrial, run_fixed
from tlmsearch.tuning.pack_runs import pack_choice, pack_groups, run_packs, train_members
from tlmsearch.tuning.runner import start_ray

__all__ = ["pack_choice", "run_trials", "train_members"]  # pack_choice, train_members: from pack_runs


def run_trials(
    run_dir: str | Path,
    cfg: SearchConfig,
    items: list[FixedTrial],
    kind: str = "verify",
    *,
    pack: str = "off",
    address: str | None = None,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
) -> list[TrialRecord]:
    """`run_fixed`, with the groups of one shape that `pack` says to pack trained as packs; the
    new records in `items` order (a trial whose record was not written is left out)."""
    if check_pack(pack) == "off":  # today's path, untouched
        return run_fixed(run_dir, cfg, items, kind, address=address, progress=progress)
    start_ray(cfg, address)  # before the choice: it sizes the packs by the trials Ray runs at once
    configs = [item.config(kind, i) for i, item in enumerate(items)]
    packed, separate = pack_groups(cfg, configs, pack)
    by_index: dict[int, TrialRecord] = {}
    if packed:
        by_index.update(run_packs(Path(run_dir), cfg, configs, packed, kind, address, progress, say))
    if separate:
        rest = run_fixed(run_dir, cfg, [items[i] for i in separate], kind, address=address, progress=progress)
        by_trial = _match(rest, [items[i] for i in separate])
        by_index.update({separate[j]: r for j, r in by_trial.items()})
    return [by_index[i] for i in range(len(items)) if i in by_index]


def _match(records: list[TrialRecord], items: list[FixedTrial]) -> dict[int, TrialRecord]:
    """`run_fixed`'s records (in `items` order, the unwritten left out) by their index in `items`."""
    out: dict[int, TrialRecord] = {}
    j = 0
    for r in records:
        while j < len(items) and not _same(r, items[j]):
            j += 1
        if j < len(items):
            out[j] = r
            j += 1
    return out


def _same(record: TrialRecord, item: FixedTrial) -> bool:
    """Whether `record` is `item`'s: its profile and seed, and its rate where the item sets one (the
    rate check's runs of one profile and seed differ in rate only)."""
    if record.seed != item.seed or record.profile != item.spec.to_dict():
        return False
    rate = (record.params or {}).get("lr")
    return item.lr is None or (isinstance(rate, int | float) and math.isclose(float(rate), item.lr, rel_tol=1e-9))
