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

from dataclasses import dataclass
from pathlib import Path

from tlmsearch.analysis.collect import label
from tlmsearch.analysis.plan import Planned, plan
from tlmsearch.analysis.summary import verdicts
from tlmsearch.analysis.verdict import Verdict
from tlmsearch.errors import UserError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.records import TrialRecord, finished
from tlmsearch.rundir.study import Study, load
from tlmsearch.tuning.fixed import FixedTrial, run_fixed


@dataclass(frozen=True)
class VerifyResult:
    run_dir: Path
    planned: list[Planned]
    new_records: list[TrialRecord]  # written by this call
    verdicts: list[Verdict]

    @property
    def reused(self) -> int:
        return sum(p.done is not None for p in self.planned)


def verify(
    study: Study | str | Path,
    top_k: int = 5,
    seeds: int = 3,
    steps: int | None = None,
    *,
    threshold: float = 0.01,
    confidence: float = 0.95,
    method: str = "t",
    address: str | None = None,
    progress: bool = True,
) -> VerifyResult:
    """Re-train the top-k profiles and the baselines with `seeds` fresh seeds; return the verdicts.

    `study` is a `Study` or a run directory. `steps` overrides the full-fidelity step count.
    """
    if top_k < 1 or seeds < 1:
        raise UserError(f"top_k={top_k} and seeds={seeds} must both be >= 1")
    if steps is not None and steps < 1:
        raise UserError(f"steps={steps} must be >= 1")
    study = load(study) if isinstance(study, str | Path) else study
    if not finished(study.records):
        raise UserError(f"{study.run_dir} has no finished trials (complete, full fidelity): nothing to verify")
    cfg = study.config
    steps = steps or cfg.train.steps
    seed_list = [cfg.seed + 1 + i for i in range(seeds)]
    planned = plan(study.records, top_k, seed_list, steps)
    items = [
        FixedTrial(spec=ProfileSpec.from_dict(p.profile), seed=p.seed, base_width=p.base_width, name=p.name)
        for p in planned
        if p.done is None
    ]
    new = run_fixed(study.run_dir, cfg, items, kind="verify", steps=steps, address=address, progress=progress)
    all_records = load(study.run_dir).records
    wanted = {p.label for p in planned}
    mine = [
        r
        for r in finished(all_records, kinds=("verify",))
        if r.max_steps == steps and r.seed in seed_list and label(r) in wanted
    ]
    vs = verdicts(
        mine + finished(all_records),
        threshold=threshold,
        confidence=confidence,
        arch=cfg.arch,
        kinds=("verify",),
        method=method,
    )
    return VerifyResult(Path(study.run_dir), planned, list(new), vs)
