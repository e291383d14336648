"""A stand-in for verify's `run_fixed`: records of known losses appended to trials.jsonl as a real
run appends them, recorded as trained with the verification's settings (no Ray, no training); and
`verify_kwargs`, what the `verify` command hands `tuning.verify.verify`."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from analysis_fakes import record

from tlmsearch.cli import main
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


def verify_kwargs(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> dict[str, Any]:
    """The keyword arguments the command hands `tuning.verify.verify` (which trains nothing here)."""
    seen: dict[str, Any] = {}

    def fake(run_dir: Any, **kwargs: Any) -> SimpleNamespace:
        seen.update(kwargs)
        return SimpleNamespace(
            planned=[],
            reused=0,
            new_records=[],
            seeds=[4],
            pilot=[1, 2, 3],
            verdicts=[],
            sequential=None,
            rate_check=[],
        )

    monkeypatch.setattr("tlmsearch.tuning.verify.verify", fake)
    assert main(["verify", *argv, "--no-report"]) == 0
    return seen
