"""verify's learning-rate check: cosine and the best candidate re-trained at half and twice the rate.

`run_rate_check` takes each verdict's candidate (`analysis.rate_check.rate_candidate`) and
cosine and trains both at half and twice the rate the verification trained at, on `n` paired
seeds (the first of its deciding seeds, continued past the last when it decided on fewer),
through `run_fixed` (or as packs: `pack`, `tuning.pack_runs`) with kind "ratecheck" and the
rate and its factor in `params`. At the base rate the pairs are the verification's own runs.
`verify.json` gets a "rate_check" entry naming every run's trial id (written before they train,
`complete` false, and again after), from which the report and `status` rebuild the check. A
resume never trains again a run recorded finished the same way, nor one that diverged (it would
diverge again: part of the answer at that rate).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tlmsearch.analysis.collect import label
from tlmsearch.analysis.rate_check import FACTORS, RateCheck, group_base_width, rate_candidate, rate_checks
from tlmsearch.analysis.verdict import Verdict
from tlmsearch.configs.lr_calibration import same_rate
from tlmsearch.configs.search import SearchConfig
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.io import read_verify, write_json
from tlmsearch.rundir.layout import VERIFY
from tlmsearch.rundir.lr import read_lr_calibration
from tlmsearch.rundir.records import RATE_KIND, TrialRecord, read_records
from tlmsearch.tuning.fixed import FixedTrial, train_items

ROLES = ("cosine", "candidate")


def rate_seeds(decided: Sequence[int], n: int) -> list[int]:
    """The check's paired seeds: the first `n` of the verification's deciding seeds, continued
    with the seeds after the last of them when it decided on fewer (pure)."""
    seeds = list(decided[:n])
    following = max(decided) + 1 if decided else 0
    while len(seeds) < n:
        seeds.append(following)
        following += 1
    return seeds


def rate_source(run_dir: str | Path, lr: float, given: bool) -> str:
    """How the base rate was chosen: "given" (verify's --lr), "calibrated" (the run's calibration
    chose it), else "configured"."""
    if given:
        return "given"
    calibration = read_lr_calibration(run_dir) or {}
    chosen = calibration.get("chosen")
    return "calibrated" if isinstance(chosen, int | float) and same_rate(float(chosen), lr) else "configured"


def _diverged(r: TrialRecord) -> bool:
    return r.status == "failed" and "diverged" in (r.reason or "")


def run_rate_check(
    run_dir: str | Path,
    cfg: SearchConfig,
    verdicts: Sequence[Verdict],
    decided: Sequence[int],
    n: int,
    *,
    same: Callable[[TrialRecord, float], bool],
    alpha: float,
    lr_given: bool = False,
    pack: str = "off",
    address: str | None = None,
    progress: bool = True,
    say: Callable[[str], None] | None = None,
) -> list[RateCheck]:
    """Train what the rate check of `verdicts` still lacks and return the checks (see the module
    docstring). `cfg` is the configuration the verification trained with (its `train.lr` is the
    base rate); `same(record, lr)`: whether a record trained as it did, at rate `lr`. `pack`: the
    runs of one rate and shape trained side by side (`tuning.pack_runs`), each still one record."""
    run_dir = Path(run_dir)
    base = cfg.train.lr
    steps = cfg.train.steps
    seeds = rate_seeds(decided, n)
    records = read_records(run_dir)
    groups: list[dict[str, Any]] = []
    items: list[FixedTrial] = []
    slots: list[tuple[dict[str, Any], int]] = []  # (the runs map of a factor and role, seed) of each item
    for v in verdicts:
        candidate = rate_candidate(v)
        if candidate is None:
            continue  # cosine alone: nothing to compare it with
        width = group_base_width(v)
        group: dict[str, Any] = {"group": v.group, "cosine": v.cosine, "candidate": candidate, "base_width": width}
        group["runs"] = runs = {}
        for factor in FACTORS:
            rate = base if factor == 1.0 else base * factor
            by_role: dict[str, dict[str, str | None]] = {}
            for role, text in zip(ROLES, (v.cosine, candidate), strict=True):
                ours = [r for r in records if label(r) == text and r.base_width == width and r.max_steps == steps]
                template = next((r for r in ours if r.kind == "verify"), None)
                if template is None:
                    raise ConfigError(f"{run_dir}: no verify record of {text} to re-train at other rates")
                by_seed: dict[str, str | None] = {}
                for seed in seeds:
                    found = _record_of(ours, seed, factor, rate, same)
                    by_seed[str(seed)] = found
                    if found is None:
                        items.append(
                            FixedTrial(
                                spec=ProfileSpec.from_dict(template.profile),
                                seed=seed,
                                base_width=template.base_width,
                                name=template.baseline,
                                lr=rate,
                                lr_factor=factor,
                            )
                        )
                        slots.append((by_seed, seed))
                by_role[role] = by_seed
            runs[format(factor, "g")] = by_role
        groups.append(group)
    if not groups:
        return []
    doc: dict[str, Any] = {
        "seeds": seeds,
        "factors": list(FACTORS),
        "base_lr": base,
        "rate_source": rate_source(run_dir, base, lr_given),
        "alpha": alpha,
        "steps": steps,
        "complete": not items,
        "groups": groups,
    }
    _write(run_dir, doc)
    if items:
        if say is not None:
            rates = ", ".join(f"{base * f:.6g}" for f in FACTORS if f != 1.0)
            say(
                f"learning-rate check: {len(items)} runs of cosine and the best candidate at {rates} (half and twice "
                f"{base:.6g}) on seeds {seeds[0]}..{seeds[-1]} (finished ones are reused)"
            )
        new = train_items(run_dir, cfg, items, RATE_KIND, pack=pack, address=address, progress=progress, say=say)
        for j, (by_seed, seed) in enumerate(slots):
            by_seed[str(seed)] = new[j].trial_id if j in new else None
        ids = [t for g in groups for by_role in g["runs"].values() for m in by_role.values() for t in m.values()]
        doc["complete"] = all(t is not None for t in ids)
        _write(run_dir, doc)
    return rate_checks(read_records(run_dir), doc)


def _record_of(
    ours: Sequence[TrialRecord],
    seed: int,
    factor: float,
    rate: float,
    same: Callable[[TrialRecord, float], bool],
) -> str | None:
    """The trial id of the run of (`seed`, `factor`) already recorded and trained the `same` way at `rate`:
    at the base rate the verification's own finished run, else a finished rate-check run; a
    rate-check run that diverged counts too (it would diverge again). None: it must train."""
    kinds = ("verify", RATE_KIND) if factor == 1.0 else (RATE_KIND,)
    for kind in kinds:
        for r in ours:
            if r.kind != kind or r.seed != seed or not same(r, rate):
                continue
            if r.finished() or (kind == RATE_KIND and _diverged(r)):
                return r.trial_id
    return None


def _write(run_dir: Path, doc: Mapping[str, Any]) -> None:
    """Put `doc` in verify.json as its "rate_check" (the rest of the file unchanged)."""
    try:
        current = read_verify(run_dir)
    except ConfigError:
        current = {}
    write_json(run_dir / VERIFY, {**current, "rate_check": dict(doc)})
