"""A finished `verify --looks` extended as a new stage (tuning.verify_sequential with verify.json
as found): the first stage's looks are replayed from their records (nothing retrains), the
decided candidates stay decided, only the new looks train, and verify.json says the history and
the alpha it spent. Fake training with records fixed per (profile, seed); no Ray."""

from __future__ import annotations

import random
from typing import Any

import pytest
from analysis_fakes import record

from tlmsearch.analysis.collect import label
from tlmsearch.analysis.plan import Planned
from tlmsearch.configs.verify import SequentialOptions
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.verify_sequential import StageHooks, run_sequential

COSINE = "cosine:start=1.5,end=0.5"
# two candidates equal to cosine (undecided at 4 seeds), uniform far worse
TRUTH = {COSINE: 2.25, "uniform": 2.60, "knots:k0=1,k1=1.2": 2.25, "linear:start=1.2,end=0.8": 2.25}


class Seeds:
    """Each (profile, seed) has one record, made the first time it is asked for."""

    def __init__(self) -> None:
        self.rng = random.Random(2)  # a first verification that ends inconclusive, 2 candidates decided
        self.made: dict[tuple[str, int], TrialRecord] = {}
        self.trained: list[tuple[str, int]] = []
        self.docs: list[dict[str, Any]] = []
        self.offsets: dict[int, float] = {}
        self.wanted: set[str] = set()

    def train_seeds(self, seeds: list[int], what: str = "", before: Any = None, only: Any = None) -> Any:
        if before is not None:
            before()
        planned, new = [], []
        for spec, loss in TRUTH.items():
            for s in seeds:
                key = (spec, s)
                r = self.made.get(key)
                fresh = r is None
                if r is None:
                    off = self.offsets.setdefault(s, self.rng.gauss(0, 0.05))  # shared by a seed's profiles
                    r = TrialRecord.from_dict(
                        record(f"v-{spec}-{s}", spec, loss + off + self.rng.gauss(0, 0.006), kind="verify", seed=s)
                    )
                if only is not None and (label(r), r.base_width) not in only:
                    continue
                self.made[key] = r
                planned.append(Planned(r.profile, r.base_width, s, None, label(r), None if fresh else r.trial_id))
                if fresh:
                    self.trained.append(key)
                    new.append(r)
        return planned, new, 1.0

    def mine(self, seeds: list[int]) -> list[TrialRecord]:
        keep = set(seeds)
        return [r for r in self.made.values() if r.seed in keep and label(r) in self.wanted]

    def record_plan(self, pilot: list[int], decide_on: list[int], plan: Any, complete: bool, seq: Any = None) -> None:
        self.docs.append(
            {
                "steps": 40,
                "pilot_seeds": pilot,
                "decision_seeds": decide_on,
                "complete": complete,
                "margin": 0.01,
                "alpha": seq["design"]["alpha"] if seq else 0.05,
                "sequential": seq,
            }
        )

    def run(self, previous: dict[str, Any] | None = None, **kw: Any) -> Any:
        opts: dict[str, Any] = {
            "first": [1],
            "n_seeds": 4,
            "looks": 2,
            "spending": "obf",
            "margin": 0.01,
            "alpha": 0.05,
            "power": 0.8,
            "max_seeds": 20,
            "arch": "transformer",
            "method": "t",
        }
        opts.update(kw)
        hooks = StageHooks(
            train_seeds=self.train_seeds,
            mine=self.mine,
            record_plan=self.record_plan,
            want=self.wanted.update,
            previous=previous,
        )
        return run_sequential("runs/fake", SequentialOptions(**opts), hooks)


@pytest.mark.slow
def test_a_finished_verification_extends_as_a_new_stage() -> None:
    fake = Seeds()
    first = fake.run()  # looks at 2 and 4 seeds at alpha 0.05: too few to decide the equal candidates
    assert first.summary["groups"][0]["outcome"] == "inconclusive" and first.summary["alpha_spent"] == 0.05
    found = fake.docs[-1]
    trained_first = list(fake.trained)
    with pytest.raises(ConfigError, match="spend it twice"):
        fake.run(found, n_seeds=12, looks=3)  # the joint study's re-planning at full alpha again
    assert fake.trained == trained_first
    ext = fake.run(found, n_seeds=12, looks=3, alpha=0.1)
    seq = ext.summary
    assert seq["design"]["looks"] == [2, 4, 8, 12]
    assert seq["design"]["stages"] == [{"end": 4, "alpha": 0.05, "spending": "obf"}]
    assert "the whole history spends alpha 0.1" in seq["extension"]
    new = fake.trained[len(trained_first) :]
    assert new and all(s > 4 for _, s in new)  # seeds 1-4 were replayed, not retrained
    stopped = {c for c, look in first.summary["groups"][0]["decided_look"].items() if look}
    assert stopped == {"uniform", "knots:k0=1,k1=1.2"}
    assert all(spec not in stopped for spec, _ in new)  # decided in the first stage: they stay stopped
    group = seq["groups"][0]
    first_looks = first.summary["groups"][0]["decided_look"]
    assert all(group["decided_look"][c] == first_looks[c] for c in stopped)  # their decisions stand
    assert seq["alpha_spent"] == group["alpha_spent"] == (0.1 if seq["looks_taken"] > 2 else 0.05)
    (v,) = ext.verdicts
    assert "the whole history" in v.headline
