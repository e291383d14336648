"""verify's rate check with fake training (no Ray): which runs it trains (half and twice the rate
for cosine and the candidate, the base rate only for seeds the verification lacks), what
verify.json names, and that a second call, after an interrupted one, trains only what is missing."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from analysis_fakes import record, write_run

from tlmsearch.analysis.plan import same_training
from tlmsearch.analysis.verdicts import verdicts
from tlmsearch.configs.search import SearchConfig
from tlmsearch.rundir.layout import VERIFY
from tlmsearch.rundir.records import RecordLog, TrialRecord, read_records
from tlmsearch.tuning import rate_check
from tlmsearch.tuning.fixed import FixedTrial
from tlmsearch.tuning.rate_check import rate_seeds, rate_source, run_rate_check

COSINE = "cosine:start=1.5,end=0.5"
KNOTS = "knots:k0=3,k1=1"
BASE = 2e-3
TRAIN = {"lr": BASE, "steps": 40, "init": "keyed"}  # what the verification trained (the fakes' records carry it)
TRUTH = {COSINE: 2.30, KNOTS: 2.26, "uniform": 2.33}


def _loss(spec: str, seed: int, lr: float) -> float:
    """Known losses: the knots profile wins by 0.04 nats at the base rate, less at half, loses at twice."""
    shift = {0.5: 0.02, 1.0: 0.0, 2.0: 0.07}[round(lr / BASE, 3)] if spec == KNOTS else 0.0
    return TRUTH[spec] + shift + 0.002 * math.sin(seed + len(spec))


def _rec(tid: str, spec: str, seed: int, kind: str, lr: float, **kw: Any) -> dict[str, Any]:
    r = record(tid, spec, _loss(spec, seed, lr), kind=kind, seed=seed, **kw)
    r["train"] = {**TRAIN, "lr": lr}
    return r


class FakeFixed:
    """Stands in for `fixed.train_items`: records every item as trained, or stops after `stop_after` items."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.calls: list[list[FixedTrial]] = []
        self.stop_after = stop_after

    def __call__(self, run_dir: Path, cfg: SearchConfig, items: list[FixedTrial], kind: str, **_: Any) -> dict:
        assert kind == "ratecheck"
        self.calls.append(list(items))
        log, new = RecordLog(run_dir), {}
        for i, item in enumerate(items):
            if self.stop_after is not None and i >= self.stop_after:
                raise KeyboardInterrupt("interrupted")
            assert item.lr is not None and item.lr_factor is not None
            tid = f"rc-{len(self.calls)}-{i}"
            d = _rec(tid, str(item.spec), item.seed, kind, item.lr, params={"lr": item.lr, "lr_factor": item.lr_factor})
            rec = TrialRecord.from_dict(d)
            log.append(rec)
            new[i] = rec
        return new


def _run(tmp_path: Path, verify_seeds: range) -> tuple[Path, list]:
    recs = [_rec(f"v-{p}-{s}", p, s, "verify", BASE) for p in TRUTH for s in verify_seeds]
    run = write_run(tmp_path / "run", recs)
    (run / VERIFY).write_text(json.dumps({"steps": 40, "decision_seeds": list(verify_seeds), "complete": True}))
    return run, verdicts(read_records(run), kinds=("verify",))


def _check(run: Path, vs: list, decided: list[int], n: int) -> list:
    cfg = SearchConfig(preset="tiny", model={"n_layers": 4}, train=SearchConfig().train.replace(lr=BASE, steps=40))

    def same(r: TrialRecord, lr: float) -> bool:
        return same_training(r, {**TRAIN, "lr": lr}, {}, None)

    return run_rate_check(run, cfg, vs, decided, n, same=same, alpha=0.05, progress=False)


def test_rate_seeds_are_the_deciding_seeds_then_the_next_ones() -> None:
    assert rate_seeds([4, 5, 6, 7, 8], 3) == [4, 5, 6]
    assert rate_seeds([4, 5], 4) == [4, 5, 6, 7]
    assert rate_seeds([], 2) == [0, 1]


def test_it_trains_half_and_twice_for_cosine_and_the_candidate_and_reuses_the_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, vs = _run(tmp_path, range(1, 7))
    assert vs[0].better == KNOTS
    fake = FakeFixed()
    monkeypatch.setattr(rate_check, "train_items", fake)
    (check,) = _check(run, vs, list(range(1, 7)), 4)
    (items,) = fake.calls
    assert sorted((str(i.spec), i.seed, i.lr_factor) for i in items) == sorted(
        (p, s, f) for p in (COSINE, KNOTS) for s in (1, 2, 3, 4) for f in (0.5, 2.0)
    )
    assert all(i.lr == pytest.approx(BASE * i.lr_factor) for i in items)  # type: ignore[operator]
    assert check.candidate == KNOTS and check.seeds == (1, 2, 3, 4) and check.rate_source == "configured"
    assert [c.n for c in check.cells] == [4, 4, 4]
    assert [c.decision for c in check.cells] == ["better", "better", "worse"]
    assert (check.outcome, check.reason) == ("rate_sensitive", "flips")
    doc = json.loads((run / VERIFY).read_text())
    assert doc["decision_seeds"] == list(range(1, 7))  # the rest of verify.json is kept
    rc = doc["rate_check"]
    assert rc["complete"] and rc["seeds"] == [1, 2, 3, 4] and rc["base_lr"] == BASE
    assert rc["groups"][0]["runs"]["1"]["candidate"]["1"] == f"v-{KNOTS}-1"  # the verification's own run
    kinds = [r.kind for r in read_records(run)]
    assert kinds.count("ratecheck") == 16 and kinds.count("verify") == 18
    # run again: everything is recorded, nothing trains, the same answer
    again = _check(run, vs, list(range(1, 7)), 4)
    assert len(fake.calls) == 1 and again == [check]


def test_an_interrupted_check_resumes_with_only_the_missing_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, vs = _run(tmp_path, range(1, 3))  # the verification decided on 2 seeds: 2 more at the base rate too
    monkeypatch.setattr(rate_check, "train_items", FakeFixed(stop_after=5))
    with pytest.raises(KeyboardInterrupt):
        _check(run, vs, [1, 2], 3)
    doc = json.loads((run / VERIFY).read_text())["rate_check"]
    assert doc["complete"] is False and doc["seeds"] == [1, 2, 3]
    done = {(str(r.spec), r.seed, r.params["lr_factor"]) for r in read_records(run) if r.kind == "ratecheck"}
    assert len(done) == 5
    fake = FakeFixed()
    monkeypatch.setattr(rate_check, "train_items", fake)
    (check,) = _check(run, vs, [1, 2], 3)
    (items,) = fake.calls
    # 2 profiles x 3 rates x 3 seeds, less the 2 x 2 base runs the verification has, less the 5 recorded
    assert len(items) == 2 * 3 * 3 - 4 - 5
    trained = {(str(i.spec), i.seed, i.lr_factor) for i in items}
    assert not trained & done  # nothing recorded trains again
    base = {(p, 3, 1.0) for p in (COSINE, KNOTS)}  # seed 3 at the base rate: the check's own runs
    assert base <= trained | done
    assert [c.n for c in check.cells] == [3, 3, 3] and json.loads((run / VERIFY).read_text())["rate_check"]["complete"]


def test_the_rate_source_says_whether_the_calibration_chose_it(tmp_path: Path) -> None:
    assert rate_source(tmp_path, BASE, given=False) == "configured"
    (tmp_path / "lr_calibration.json").write_text(json.dumps({"chosen": BASE, "rates": [1e-3, 2e-3]}))
    assert rate_source(tmp_path, BASE, given=False) == "calibrated"
    assert rate_source(tmp_path, 4e-3, given=False) == "configured"
    assert rate_source(tmp_path, BASE, given=True) == "given"
