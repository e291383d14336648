"""Controlled comparison: train a fixed list of profiles with several seeds (no sampler, no early
stopping) into a new run directory, then judge them with the verify statistics and report.

The paper's experiment (uniform vs one third of the layers wider early/middle/late vs cosine):

    from tlmsearch.tuning.compare import compare
    result = compare(["uniform", "groups:early", "groups:middle", "groups:late", "cosine"],
                     arch="transformer", preset="cpu-s", seeds=3)

The run directory holds `search.yaml` (a SearchConfig whose baselines are the compared
profiles, so `tlmsearch.load`, `report` and `export` read it like a search), `compare.json`
(profiles and seeds) and `trials.jsonl` with records of kind "compare". The report is written
by the public `tlmsearch.compare` (`tlmsearch.api`): training does not write reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlmsearch.analysis.summary import verdicts
from tlmsearch.analysis.verdict import Verdict, is_default_reference, resolve_levels
from tlmsearch.configs.compare import CompareOptions, compare_config
from tlmsearch.configs.identity import check_distinct_shapes
from tlmsearch.costs.price import LIMIT_HOURS
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.io import write_json
from tlmsearch.rundir.layout import COMPARE, SEARCH_CONFIG, create_run_dir
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.announce import announce, check_fixed_price, fixed_line
from tlmsearch.tuning.fixed import FixedTrial, run_fixed
from tlmsearch.tuning.resources import check_resources
from tlmsearch.tuning.runner import resolve


@dataclass(frozen=True)
class CompareResult:
    run_dir: Path
    profiles: list[str]
    seeds: list[int]
    records: list[TrialRecord]  # the records of this comparison
    verdicts: list[Verdict]  # empty when cosine is not among the profiles


def compare(
    profiles: Sequence[str],
    options: CompareOptions | None = None,
    *,
    yes: bool = True,
    max_hours: float = LIMIT_HOURS,
    **changes: Any,
) -> CompareResult:
    """Train every profile in `profiles` (ProfileSpec texts) with seeds seed..seed+seeds-1.

    `options` (`configs.compare.CompareOptions`), or its fields as keywords, or both (keywords
    win). Writes the run directory (no report: see `tlmsearch.compare`). `yes=False`: refuse a
    compare priced beyond `max_hours` of this machine before anything is written.
    """
    o = CompareOptions.of(options, **changes)
    cfg, specs = compare_config(profiles, o)
    margin, alpha = resolve_levels(o.margin, o.alpha, threshold=o.threshold, confidence=o.confidence)
    texts = list(cfg.baselines)
    # everything (numbers, names, models, memory, runs_dir) is checked before the run directory
    # exists and before Ray starts, so a refused compare leaves nothing behind to block a retry
    cfg = resolve(cfg).replace(name="")  # checked; storage made absolute
    width = o.base_width or None
    flag = "allow_collapsed (--allow-collapsed)"
    found = check_distinct_shapes(
        cfg, texts, what="compare", allow=o.allow_collapsed, flag=flag, base_width=width, searched=False
    )
    specs = [c.spec for c in found]  # one candidate a model, trained once under its first name
    aliases = {str(c.spec): list(c.names[1:]) for c in found if len(c.names) > 1}
    if not yes:
        if not o.address:  # a trial that cannot fit here says so before its price does
            check_resources(cfg)
        check_fixed_price(cfg, len(specs) * o.seeds, f"compare {o.name or o.arch}".rstrip(), max_hours=max_hours)
    run_path = create_run_dir(o.runs_dir, o.name or None, prefix=f"compare-{o.arch}")
    cfg = cfg.replace(name=run_path.name)
    cfg.save(run_path / SEARCH_CONFIG)
    seed_list = [o.seed + i for i in range(o.seeds)]
    doc = {"profiles": texts, "seeds": seed_list, "steps": cfg.train.steps} | ({"aliases": aliases} if aliases else {})
    if not is_default_reference(o.reference):
        doc["reference"] = str(ProfileSpec.parse(o.reference))
    write_json(run_path / COMPARE, doc)
    items = [FixedTrial(spec=s, seed=k, base_width=width, name=str(s)) for s in specs for k in seed_list]
    if o.progress:
        what = f"compare {run_path.name} ({len(specs)} profiles x {o.seeds} seeds)"
        announce(fixed_line, o.address, cfg, len(items), what)
    new = run_fixed(run_path, cfg, items, "compare", pack=cfg.pack, address=o.address, progress=o.progress)
    vs = verdicts(
        new, margin=margin, alpha=alpha, arch=o.arch, kinds=("compare",), method=o.method, aliases=aliases,
        reference=o.reference,
    )  # fmt: skip
    return CompareResult(run_path, texts, seed_list, list(new), vs)
