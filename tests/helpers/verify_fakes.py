"""A stand-in for verify's `run_fixed`: records of known losses appended to trials.jsonl as a real
run appends them, recorded as trained with the verification's settings (no Ray, no training)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysis_fakes import record

from tlmsearch.rundir.records import RecordLog, TrialRecord
from tlmsearch.tuning.trainable import trial_train_config


def seeded_loss(truth: Callable[[str], float], own_sd: float) -> Callable[[str, int], float]:
    """A profile's true loss, plus a seed offset shared by a seed's profiles (sd 0.05 nats) and a
    profile's own noise (sd `own_sd`), each drawn from its own named stream: the same every run."""

    def loss(spec: str, seed: int) -> float:
        offset = random.Random(seed).gauss(0.0, 0.05)
        own = random.Random(f"{spec}/{seed}").gauss(0.0, own_sd)
        return truth(spec) + offset + own

    return loss


class FakeRuns:
    """`run_fixed` training nothing: each item's record takes `loss(spec, seed)`; `trained` lists
    (spec, seed) in the order they were asked for."""

    def __init__(self, loss: Callable[[str, int], float]) -> None:
        self.loss = loss
        self.trained: list[tuple[str, int]] = []

    def __call__(self, run_dir: Path, cfg: Any, items: list[Any], kind: str, **_: Any) -> list[TrialRecord]:
        assert kind == "verify"
        log, new = RecordLog(run_dir), []
        for item in items:
            spec = str(item.spec)
            r = record(f"v-{spec}-{item.seed}", spec, self.loss(spec, item.seed), kind="verify", seed=item.seed)
            r.update(train=trial_train_config(cfg, item.seed).to_dict(), data=cfg.data.to_dict(), devices=["cpu"])
            rec = TrialRecord.from_dict(r)
            log.append(rec)
            new.append(rec)
            self.trained.append((spec, item.seed))
        return new
