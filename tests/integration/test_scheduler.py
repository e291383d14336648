"""Reproducible asynchronous HyperBand: seeded brackets, no bracket without a rung, baselines kept.

Fed synthetic trials (the scheduler sees only `trial_id`, `config` and results), and, marked
slow, two real searches on a local Ray.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.scheduler import BaselineKeepingASHA, brackets_with_rungs


def scheduler(seed: int = 0, brackets: int = 3, max_t: int = 300, grace: int = 50, rf: int = 3) -> BaselineKeepingASHA:
    return BaselineKeepingASHA(
        time_attr="step", metric="val_loss", mode="min", max_t=max_t, grace_period=grace, reduction_factor=rf,
        brackets=brackets, seed=seed,
    )  # fmt: skip


def trials(n: int, baselines: int = 0) -> list[Any]:
    out = [
        SimpleNamespace(trial_id=f"b{i}", config={"profile": f"base{i}", "baseline": f"base{i}"})
        for i in range(baselines)
    ]
    out += [SimpleNamespace(trial_id=f"t{i}", config={"profile": f"p{i}", "number": i}) for i in range(n)]
    return out


def brackets_of(s: BaselineKeepingASHA, added: list[Any]) -> list[int]:
    for t in added:
        s.on_trial_add(None, t)
    return [s.brackets.index(s.bracket_of[t.trial_id]) for t in added]


def replay(s: BaselineKeepingASHA, added: list[Any], losses: dict[str, list[float]], interval: int = 50) -> list[str]:
    """Report each trial's curve an evaluation at a time, round-robin, until stopped: the decisions."""
    for t in added:
        s.on_trial_add(None, t)
    alive, decisions, step = list(added), [], interval
    while alive:
        for t in list(alive):
            loss = losses[t.trial_id][step // interval - 1]
            d = s.on_trial_result(None, t, {"step": step, "val_loss": loss})
            decisions.append(f"{t.trial_id}@{step}:{d}")
            if d == "STOP" or step >= 300:
                alive.remove(t)
                s.on_trial_complete(None, t, {"step": step, "val_loss": loss})
        step += interval
    return decisions


@pytest.mark.parametrize(
    ("max_t", "grace", "rf", "expected"),
    [
        (300, 50, 3, 2),
        (300, 100, 3, 1),
        (300, 50, 2, 3),
        (30, 10, 3, 1),
        (40, 10, 3, 2),
        (300, 300, 3, 1),
        (300, 10, 3, 4),
    ],
)
def test_no_bracket_without_a_rung_before_max_t(max_t: int, grace: int, rf: int, expected: int) -> None:
    assert brackets_with_rungs(max_t, grace, rf) == expected
    s = scheduler(brackets=5, max_t=max_t, grace=grace, rf=rf)
    assert len(s.brackets) == expected
    if expected > 1:  # every bracket can stop a trial before the end
        assert all(min(m for m, _ in b.rungs) < max_t for b in s.brackets)
    assert len(scheduler(brackets=1, max_t=max_t, grace=grace, rf=rf).brackets) == 1


def test_the_issue_case_has_two_brackets_not_three() -> None:
    s = scheduler(brackets=3)  # 300 steps, grace 50, reduction factor 3
    assert [sorted(m for m, _ in b.rungs) for b in s.brackets] == [[50, 150], [150]]
    assert s.bracket_probabilities() == pytest.approx([np.e / (np.e + 1), 1 / (np.e + 1)])


def test_brackets_are_a_function_of_the_seed_and_the_trial() -> None:
    added = trials(60, baselines=4)
    first = brackets_of(scheduler(seed=7), added)
    assert brackets_of(scheduler(seed=7), added) == first
    # the global NumPy state (what Ray's own scheduler draws from) plays no part
    np.random.seed(123)
    again = brackets_of(scheduler(seed=7), list(reversed(added)))
    assert again == list(reversed(first))  # nor does the order in which trials arrive
    assert brackets_of(scheduler(seed=8), added) != first
    assert set(first) == {0, 1}


def test_bracket_frequencies_follow_rays_softmax() -> None:
    chosen = brackets_of(scheduler(seed=0), trials(4000))
    share0 = chosen.count(0) / len(chosen)
    assert abs(share0 - np.e / (np.e + 1)) < 0.03  # 0.731; the standard error is 0.007


def test_same_seed_same_stop_decisions_and_baselines_run_to_the_end() -> None:
    rng = np.random.default_rng(0)
    added = trials(30, baselines=4)
    losses = {t.trial_id: list(np.sort(rng.normal(2.5, 0.1, 6))[::-1]) for t in added}
    a = replay(scheduler(seed=3), added, losses)
    np.random.seed(99)
    assert replay(scheduler(seed=3), added, losses) == a
    assert any(d.endswith("STOP") and not d.startswith("b") and "@300" not in d for d in a)  # early stops happened
    for i in range(4):  # baselines reach 300 steps
        assert [d for d in a if d.startswith(f"b{i}@")][-1] == f"b{i}@300:CONTINUE"


def test_pickled_scheduler_keeps_its_seed_and_brackets() -> None:
    s = scheduler(seed=5)
    added = trials(10)
    before = brackets_of(s, added)
    restored = pickle.loads(pickle.dumps(s))
    assert restored.seed == 5 and len(restored.brackets) == 2
    assert brackets_of(restored, added) == before


def test_each_budget_has_rungs_of_its_own() -> None:
    """A sweep's small budgets lose to its large ones on loss alone; each budget's best must
    still reach full fidelity, because a trial is compared only within its budget."""
    rng = np.random.default_rng(1)
    added, losses = [], {}
    for width, level in ((32, 3.0), (64, 2.6), (128, 2.2)):
        for i in range(8):
            t = SimpleNamespace(trial_id=f"w{width}-{i}", config={"profile": f"p{i}", "number": i, "base_width": width})
            added.append(t)
            losses[t.trial_id] = list(np.sort(rng.normal(level, 0.05, 6))[::-1])
    decisions = replay(scheduler(seed=0, brackets=1), added, losses)
    for width in (32, 64, 128):
        finished = [d for d in decisions if d.startswith(f"w{width}-") and "@300" in d]
        stopped = [d for d in decisions if d.startswith(f"w{width}-") and d.endswith("STOP") and "@300" not in d]
        assert finished and stopped, width  # within each budget: some go on to the end, some are cut
    s = scheduler(brackets=1)
    for t in added:
        s.on_trial_add(None, t)
    assert sorted(s.by_budget) == [32, 64, 128]
    assert s.bracket_of["w32-0"] is not s.bracket_of["w128-0"]
    assert s.bracket_of["w32-0"] is s.bracket_of["w32-1"]  # one bracket per budget


def test_a_scheduler_without_metric_refuses_trials() -> None:
    s = BaselineKeepingASHA(
        time_attr="step", metric="", mode="", max_t=300, grace_period=50, reduction_factor=3, brackets=3
    )
    with pytest.raises(ValueError, match="needs a metric and a mode"):
        s.on_trial_add(None, trials(1)[0])


# ----------------------------------------------------------------------------- resume: rungs from records


def search_trials(n: int, baselines: int = 2, base_width: int | None = None) -> list[Any]:
    """Trials whose configs look like a search's: baselines by name, sampled ones with a number
    and a profile text that a record's profile dict rebuilds exactly."""
    extra = {} if base_width is None else {"base_width": base_width}
    out = [
        SimpleNamespace(trial_id=f"b{i}", config={"profile": name, "baseline": name, **extra})
        for i, name in enumerate(["uniform", "cosine:start=1.5,end=0.5"][:baselines])
    ]
    out += [
        SimpleNamespace(
            trial_id=f"t{i}", config={"profile": f"linear:start={1 + (i + 1) / 37},end=0.5", "number": i, **extra}
        )
        for i in range(n)
    ]
    return out


def run_sequentially(s: BaselineKeepingASHA, added: list[Any], losses: dict[str, list[float]]) -> list[TrialRecord]:
    """Each trial in turn until stopped or at 300 steps; the records a search would write."""
    records = []
    for n, t in enumerate(added):
        s.on_trial_add(None, t)
        curve = []
        for step in range(50, 301, 50):
            loss = losses[t.trial_id][step // 50 - 1]
            curve.append({"step": float(step), "val_loss": loss})
            if s.on_trial_result(None, t, {"step": step, "val_loss": loss}) == "STOP" or step == 300:
                break
        s.on_trial_complete(None, t, {"step": step, "val_loss": loss})
        spec = ProfileSpec.parse(t.config["profile"])
        records.append(
            TrialRecord(
                trial_id=t.trial_id, number=t.config.get("number", -1), baseline=t.config.get("baseline"),
                kind="baseline" if t.config.get("baseline") else "sampled",
                status="complete" if step == 300 else "stopped", profile=spec.to_dict(),
                params={k: v for k, v in t.config.items() if k == "base_width"}, steps=step, max_steps=300,
                curve=tuple(curve), ended_at=f"2026-12-01T00:{n:02d}:00+00:00",
            )
        )  # fmt: skip
    return records


@pytest.mark.parametrize("brackets", [1, 3])
@pytest.mark.parametrize("base_width", [None, 64])
def test_a_resumed_search_stops_what_an_uninterrupted_one_stops(brackets: int, base_width: int | None) -> None:
    """Killed after 12 of 30 trials, a fresh scheduler primed from the 12 records makes the same
    decisions on the other 18 as the scheduler that never stopped; an unprimed one does not."""
    rng = np.random.default_rng(4)
    added = search_trials(28, base_width=base_width)
    losses = {t.trial_id: list(np.sort(rng.normal(2.5, 0.1, 6))[::-1]) for t in added}
    whole = run_sequentially(scheduler(seed=2, brackets=brackets), added, losses)
    primed = scheduler(seed=2, brackets=brackets)
    assert primed.prime(whole[:12]) == 12
    rest = run_sequentially(primed, added[12:], losses)
    assert [(r.trial_id, r.steps) for r in rest] == [(r.trial_id, r.steps) for r in whole[12:]]
    forgetful = run_sequentially(scheduler(seed=2, brackets=brackets), added[12:], losses)
    assert [r.steps for r in forgetful] != [r.steps for r in whole[12:]]  # what the priming is for


def test_priming_skips_other_runs_and_is_idempotent() -> None:
    added = search_trials(6)
    rng = np.random.default_rng(0)
    losses = {t.trial_id: list(np.sort(rng.normal(2.5, 0.1, 6))[::-1]) for t in added}
    records = run_sequentially(scheduler(brackets=1), added, losses)
    others = [
        dataclasses.replace(records[0], trial_id="n0", kind="noise"),
        dataclasses.replace(records[1], trial_id="v0", kind="verify"),
        dataclasses.replace(records[2], trial_id="c0", curve=()),
    ]
    s = scheduler(brackets=1)
    assert s.prime(records + others) == len(records)
    rungs = [dict(recorded) for _, recorded in s.brackets[0].rungs]
    assert s.prime(records) == 0
    assert [dict(recorded) for _, recorded in s.brackets[0].rungs] == rungs
    assert set(rungs[-1]) == {r.trial_id for r in records}  # every trial passed the first rung's milestone
    assert rungs[-1]["t0"] == -records[2].curve[0]["val_loss"]  # Ray keeps rewards: minus the loss


def test_the_same_stops_as_rays_own_asha() -> None:
    """Written over Tune's public scheduler API, the rungs decide as Ray's `AsyncHyperBandScheduler`
    does: one bracket, no baselines, the same results in the same order, the same decisions."""
    from ray.tune.schedulers import AsyncHyperBandScheduler

    rng = np.random.default_rng(5)
    added = trials(40)
    losses = {t.trial_id: list(np.sort(rng.normal(2.5, 0.1, 6))[::-1]) for t in added}
    ray_asha = AsyncHyperBandScheduler(
        time_attr="step", metric="val_loss", mode="min", max_t=300, grace_period=50, reduction_factor=3, brackets=1
    )
    ours = replay(scheduler(brackets=1), added, losses)
    assert replay(ray_asha, added, losses) == ours
    assert sum(d.endswith("STOP") and "@300" not in d for d in ours) > 10  # early stops happened


# ----------------------------------------------------------------------------- real Ray


@pytest.fixture
def ray_session() -> Iterator[None]:
    import ray

    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, object_store_memory=80 * 1024**2, log_to_driver=False
    )
    yield
    ray.shutdown()


@pytest.mark.slow
def test_two_identical_hyperband_searches_give_the_same_trial_sequence(tmp_path: Path, ray_session: None) -> None:
    from tlmsearch.core.base import DataConfig, TrainConfig
    from tlmsearch.tuning import SearchConfig, search

    def run(name: str, global_seed: int) -> list[tuple[Any, ...]]:
        np.random.seed(global_seed)  # Ray's own bracket choice would draw from this
        cfg = SearchConfig(
            name=name, runs_dir=str(tmp_path), preset="tiny", model={"n_layers": 4}, trials=8, grace_steps=10,
            scheduler="hyperband", sampler="tpe", space="knots", seed=0, max_concurrent=1, noise_seeds=0,
            train=TrainConfig(steps=40, eval_interval=10, warmup_steps=5, batch_size=8, eval_windows=8),
            data=DataConfig(corpus="pydoc"),
        )  # fmt: skip
        records = sorted(search(cfg, progress=False).records, key=lambda r: r.started_at)
        return [(r.kind, r.number, r.params, r.widths, r.steps, r.status, r.metrics.get("val_loss")) for r in records]

    first = run("a", 1)
    assert len(first) == 8
    # with Ray's own bracket choice, global seeds 1 and 3 give different sequences here (trial 4
    # stopped at step 30 / completed: checked on 2026-11-30 with the stock on_trial_add)
    assert run("b", 3) == first
