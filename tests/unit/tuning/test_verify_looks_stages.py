"""The stages of `verify --looks` (tuning.verify_sequential.run_sequential) with fake training:
which profiles train at each look, when the study stops, what verify.json records, and the
pilot path that plans N_max (no Ray)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from analysis_fakes import record

from tlmsearch.analysis.collect import label
from tlmsearch.analysis.plan import Planned
from tlmsearch.configs.verify import SequentialOptions
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.verify_sequential import StageHooks, run_sequential

COSINE = "cosine:start=1.5,end=0.5"


class FakeVerify:
    """train_seeds / mine / record_plan over in-memory records with known true losses."""

    def __init__(self, truth: dict[str, float], noise: float, seed: int = 0) -> None:
        self.truth, self.noise = truth, noise
        self.rng = random.Random(seed)
        self.records: list[TrialRecord] = []
        self.stages: list[tuple[list[int], set[str]]] = []
        self.docs: list[dict[str, Any]] = []
        self.wanted: set[str] = set()
        self.offsets: dict[int, float] = {}

    def train_seeds(
        self, seeds: list[int], what: str = "", before: Any = None, only: set[tuple[str, int]] | None = None
    ) -> tuple[list[Planned], list[TrialRecord], float]:
        if before is not None:
            before()
        planned, new = [], []
        for spec, loss in self.truth.items():
            for s in seeds:
                off = self.offsets.setdefault(s, self.rng.gauss(0, 0.05))  # shared by every profile of a seed
                r = TrialRecord.from_dict(
                    record(f"v-{spec}-{s}", spec, loss + off + self.rng.gauss(0, self.noise), kind="verify", seed=s)
                )
                if only is not None and (label(r), r.base_width) not in only:
                    continue
                planned.append(Planned(r.profile, r.base_width, s, None, label(r)))
                new.append(r)
        self.records += new
        self.stages.append((list(seeds), {p.label for p in planned}))
        return planned, new, 1.0

    def mine(self, seeds: list[int]) -> list[TrialRecord]:
        keep = set(seeds)
        return [r for r in self.records if r.seed in keep and label(r) in self.wanted]

    def record_plan(self, pilot: list[int], decide_on: list[int], plan: Any, complete: bool, seq: Any = None) -> None:
        self.docs.append({"pilot": pilot, "decide_on": decide_on, "complete": complete, "sequential": seq})

    def run(self, **kw: Any) -> Any:
        opts: dict[str, Any] = {
            "first": [1, 2],
            "n_seeds": 12,
            "looks": 3,
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
            train_seeds=self.train_seeds, mine=self.mine, record_plan=self.record_plan, want=self.wanted.update
        )
        return run_sequential("runs/fake", SequentialOptions(**opts), hooks)


@pytest.mark.slow
def test_a_clear_winner_ends_the_study_at_the_first_look() -> None:
    truth = {COSINE: 2.25, "uniform": 2.30, "knots:k0=3,k1=1": 2.10, "linear:start=1.2,end=0.8": 2.27}
    fake = FakeVerify(truth, noise=0.001)
    res = fake.run()
    assert [s for s, _ in fake.stages] == [[1, 2, 3, 4]]  # 12 seeds in 3 looks: 4, 8, 12
    (v,) = res.verdicts
    assert v.outcome == "better" and v.better == "knots:k0=3,k1=1"
    assert res.seeds == [1, 2, 3, 4] and res.summary["looks_taken"] == 1
    assert fake.docs[-1]["complete"] is True and fake.docs[0]["complete"] is False


def test_decided_candidates_stop_and_undecided_ones_train_on() -> None:
    # two candidates far worse than cosine (decided "within the margin" at once), one equal to
    # cosine with more noise of its own (decided later or never)
    truth = {COSINE: 2.25, "uniform": 2.60, "linear:start=1.2,end=0.8": 2.60, "knots:k0=1,k1=1.2": 2.25}
    fake = FakeVerify(truth, noise=0.01)
    res = fake.run(n_seeds=12, looks=3)
    first, *later = fake.stages
    assert first[1] == set(truth)  # every profile trains the first look
    assert later  # the candidate equal to cosine is not decided at 4 seeds
    for _, labels in later:  # then only cosine and the undecided candidate
        assert labels == {COSINE, "knots:k0=1,k1=1.2"}
    decided = res.summary["groups"][0]["decided_look"]
    assert decided["uniform"] == decided["linear:start=1.2,end=0.8"] == 1
    runs = sum(len(labels) * len(seeds) for seeds, labels in fake.stages)
    assert res.summary["groups"][0]["runs"] == runs == len(fake.records)


def test_auto_plans_the_most_seeds_after_a_pilot_that_does_not_decide() -> None:
    truth = {COSINE: 2.25, "uniform": 2.60, "knots:k0=3,k1=1": 2.60}
    fake = FakeVerify(truth, noise=0.004)
    res = fake.run(first=[1, 2, 3], n_seeds=None, looks=2, max_seeds=12)
    assert res.pilot == [1, 2, 3]
    design = res.summary["design"]
    assert design["looks"][-1] <= 12 - 3  # pilot + most seeds within --max-seeds
    assert res.summary["seeds"][0] == 4  # the deciding seeds come after the pilot's
    assert fake.stages[0][0] == [1, 2, 3] and fake.stages[1][0][0] == 4
