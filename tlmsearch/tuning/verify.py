"""Re-evaluation with seeds: re-train the top-k profiles of a search and the baselines at full
fidelity with fresh seeds, then judge cosine with seed-paired statistics.

Short, noisy trials make the search's best trial optimistic (the winner's curse). `verify`
therefore trains every chosen profile again with `seeds` new seeds (search seed + 1, + 2, ...,
never the seed the search selected on), in parallel through Ray (`run_fixed`), appends the
records with kind "verify" to the same run directory, and reuses finished verify records when
run again. Which profiles and seeds: `tlmsearch.analysis.plan`.

    from tlmsearch.tuning.verify import verify
    result = verify("runs/my-search", top_k=5, seeds=3)
    print(result.verdicts[0].headline)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlmsearch.analysis.collect import label
from tlmsearch.analysis.plan import RESOURCE_FIELDS, Planned, plan, same_training
from tlmsearch.analysis.stats import check_method
from tlmsearch.analysis.summary import verdicts
from tlmsearch.analysis.verdict import Verdict, resolve_levels
from tlmsearch.errors import UserError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.records import TrialRecord, finished
from tlmsearch.rundir.study import Study, load
from tlmsearch.search_config import SearchConfig
from tlmsearch.tuning.fixed import FixedTrial, run_fixed
from tlmsearch.tuning.trainable import trial_train_config


@dataclass(frozen=True)
class VerifyResult:
    run_dir: Path
    planned: list[Planned]
    new_records: list[TrialRecord]  # written by this call
    verdicts: list[Verdict]

    @property
    def reused(self) -> int:
        return sum(p.done is not None for p in self.planned)


def retrain_config(
    cfg: SearchConfig,
    *,
    seeds: int,
    steps: int | None = None,
    train: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
) -> tuple[SearchConfig, list[int]]:
    """The search config a re-evaluation trains with, and its seeds (pure).

    `train`/`data` replace single TrainConfig/DataConfig fields of the search's settings (the
    CLI's training flags); `steps` defaults to the search's full fidelity. The seeds start at
    `train["seed"]` when given, else at the search's seed + 1: fresh, never the seed the search
    selected on.
    """
    changes = dict(train or {})
    if steps is not None:
        changes["steps"] = steps
    first = int(changes.get("seed", cfg.seed + 1))
    new_train = cfg.train.from_dict({**cfg.train.to_dict(), **changes, "seed": first}, where="train")
    new_data = cfg.data.from_dict({**cfg.data.to_dict(), **(data or {})}, where="data")
    return cfg.replace(train=new_train, data=new_data), [first + i for i in range(seeds)]


def verify(
    study: Study | str | Path,
    top_k: int = 5,
    seeds: int = 3,
    steps: int | None = None,
    *,
    train: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    threshold: float | None = None,
    confidence: float | None = None,
    method: str = "t",
    margin: float | None = None,
    alpha: float | None = None,
    address: str | None = None,
    progress: bool = True,
) -> VerifyResult:
    """Re-train the top-k profiles and the baselines with `seeds` fresh seeds; return the verdicts.

    `study` is a `Study` or a run directory. `steps` overrides the full-fidelity step count;
    `train`/`data` override single fields of the search's training and data settings (see
    `retrain_config`). Finished verify records are reused only when trained the same way.
    `margin` (old name `threshold`) and `alpha` (or `confidence` = 1 - alpha) decide the verdict.
    """
    if top_k < 1 or seeds < 1:
        raise UserError(f"top_k={top_k} and seeds={seeds} must both be >= 1")
    margin, alpha = resolve_levels(margin, alpha, threshold=threshold, confidence=confidence)
    check_method(method, seeds)  # before any training: the bootstrap needs enough seeds
    if steps is not None and steps < 1:
        raise UserError(f"steps={steps} must be >= 1")
    study = load(study) if isinstance(study, str | Path) else study
    if not finished(study.records):
        raise UserError(f"{study.run_dir} has no finished trials (complete, full fidelity): nothing to verify")
    cfg, seed_list = retrain_config(study.config, seeds=seeds, steps=steps, train=train, data=data)
    steps = cfg.train.steps
    wanted_train, wanted_data = trial_train_config(cfg, seed_list[0]).to_dict(), cfg.data.to_dict()
    # seeds, steps and resources are matched elsewhere or do not change what a trial learns
    overridden = any(k not in (*RESOURCE_FIELDS, "steps") for k in train or {}) or any(
        k != "cache_dir" for k in data or {}
    )

    def reusable(r: TrialRecord) -> bool:
        return same_training(r, wanted_train, wanted_data, overridden)

    planned = plan(study.records, top_k, seed_list, steps, reusable)
    items = [
        FixedTrial(spec=ProfileSpec.from_dict(p.profile), seed=p.seed, base_width=p.base_width, name=p.name)
        for p in planned
        if p.done is None
    ]
    new = run_fixed(study.run_dir, cfg, items, kind="verify", address=address, progress=progress)
    all_records = load(study.run_dir).records
    wanted = {p.label for p in planned}
    mine = [
        r
        for r in finished(all_records, kinds=("verify",))
        if r.max_steps == steps and r.seed in seed_list and label(r) in wanted and reusable(r)
    ]
    vs = verdicts(
        mine + [r for r in finished(all_records) if r.kind != "verify" or reusable(r)],
        margin=margin,
        alpha=alpha,
        arch=cfg.arch,
        kinds=("verify",),
        method=method,
    )
    return VerifyResult(Path(study.run_dir), planned, list(new), vs)
