"""ProfileSearch without a Ray cluster: baselines first, determinism, PRUNED / FAIL bookkeeping."""

from __future__ import annotations

import warnings

import optuna
import pytest

from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.tuning import SearchConfig
from tlmsearch.tuning.searcher import DefineProfile, ProfileSearch, baseline_points, sweep_of

optuna.logging.set_verbosity(optuna.logging.WARNING)


def config(**changes: object) -> SearchConfig:
    base = SearchConfig(
        preset="tiny", model={"n_layers": 4}, trials=8, seed=3,
        train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5), data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    return base.replace(**changes)


def searcher(cfg: SearchConfig) -> ProfileSearch:
    define = DefineProfile(cfg.space, 4, sweep_of(cfg))
    return ProfileSearch(define, cfg=cfg, storage=None, baselines=baseline_points(cfg, define))


def test_baselines_are_the_first_trials_and_train_exactly_the_baseline() -> None:
    cfg = config()
    s = searcher(cfg)
    configs = [s.suggest(f"t{i}") for i in range(6)]
    assert [c.get("baseline") for c in configs[:4]] == list(cfg.baselines)
    assert [c["profile"] for c in configs[:4]] == list(cfg.baselines)
    assert all("baseline" not in c for c in configs[4:])
    # the default space (taper) expresses every default baseline: they all enter the study
    assert [c.get("number") for c in configs[:4]] == [0, 1, 2, 3]
    assert [c["number"] for c in configs[4:]] == [4, 5]
    assert all("taper" in c and c["profile"] not in cfg.baselines for c in configs[4:])  # sampled from taper
    # knots expresses uniform and linear only; the cosines run outside its study
    knots = searcher(cfg.replace(space="knots"))
    assert [knots.suggest(f"t{i}").get("number") for i in range(6)] == [0, None, 1, None, 2, 3]


def test_same_seed_same_first_profiles_other_seed_others() -> None:
    first = [c["profile"] for c in (lambda s: [s.suggest(f"t{i}") for i in range(7)])(searcher(config()))]
    again = [c["profile"] for c in (lambda s: [s.suggest(f"t{i}") for i in range(7)])(searcher(config()))]
    other = [c["profile"] for c in (lambda s: [s.suggest(f"t{i}") for i in range(7)])(searcher(config(seed=4)))]
    assert first == again
    assert first[:4] == other[:4] and first[4:] != other[4:]


def test_partial_trials_are_pruned_failed_ones_fail_full_ones_complete() -> None:
    s = searcher(config(baselines=()))
    for i in range(3):
        s.suggest(f"t{i}")
    s.on_trial_result("t0", {"val_loss": 4.0, "step": 10, "training_iteration": 1})
    s.on_trial_complete("t0", {"val_loss": 3.9, "step": 30, "training_iteration": 3})
    s.on_trial_result("t1", {"val_loss": 4.5, "step": 10, "training_iteration": 1})
    s.on_trial_complete("t1", {"val_loss": 4.5, "step": 10, "training_iteration": 1})  # stopped by ASHA
    s.on_trial_complete("t2", {"failed": 1, "reason": "TrainingDiverged", "step": 0})
    states = [t.state for t in s.study.trials]
    assert states == [optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.FAIL]
    assert s.study.best_value == pytest.approx(3.9)


def test_every_evaluation_reaches_optuna_by_training_step_with_the_stopping_one() -> None:
    s = searcher(config(baselines=()))
    s.suggest("t0"), s.suggest("t1")
    curve = [{"step": 10, "val_loss": 4.4}, {"step": 20, "val_loss": 4.1}]
    s.on_trial_result("t0", {"val_loss": 4.4, "step": 10, "training_iteration": 1, "curve": curve[:1]})
    # the scheduler stops t0 at step 20: Ray gives this result only to on_trial_complete
    s.on_trial_complete("t0", {"val_loss": 4.1, "step": 20, "training_iteration": 2, "curve": curve})
    s.on_trial_complete("t1", {"val_loss": 3.8, "step": 30, "training_iteration": 3, "curve": []})
    t0, t1 = s.study.trials
    assert t0.state == optuna.trial.TrialState.PRUNED and t0.intermediate_values == {10: 4.4, 20: 4.1}
    assert t0.value == pytest.approx(4.1)  # Optuna gives a pruned trial its last intermediate value
    assert t1.state == optuna.trial.TrialState.COMPLETE and t1.intermediate_values == {30: 3.8}


def test_a_resumed_trial_re_reporting_steps_changes_nothing() -> None:
    s = searcher(config(baselines=()))
    s.suggest("t0")
    s.on_trial_result("t0", {"val_loss": 4.4, "step": 10})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.on_trial_result("t0", {"val_loss": 4.4, "step": 10, "curve": [{"step": 10, "val_loss": 4.4}]})
    assert s.study.trials[0].intermediate_values == {10: 4.4}


def test_multi_objective_front_in_optuna_has_only_full_fidelity_trials() -> None:
    cfg = config(objectives=("val_loss", "params"), base_widths=(32, 96), sampler="nsga2", baselines=())
    s = searcher(cfg)
    configs = [s.suggest(f"t{i}") for i in range(4)]
    assert all(32 <= c["base_width"] <= 96 and c["base_width"] % 8 == 0 for c in configs)
    s.on_trial_complete("t0", {"val_loss": 4.0, "params": 9000.0, "step": 30})
    s.on_trial_complete("t1", {"val_loss": 3.0, "params": 1000.0, "step": 10})  # would dominate, but partial
    s.on_trial_complete("t2", {"val_loss": 3.5, "params": 12000.0, "step": 30})
    s.on_trial_complete("t3", {"val_loss": 4.5, "params": 10000.0, "step": 30})  # dominated by t0
    assert sorted(t.number for t in s.study.best_trials) == [0, 2]


def test_sweep_baselines_run_at_every_budget() -> None:
    cfg = config(objectives=("val_loss", "params"), base_widths=(32, 96), sampler="tpe")
    s = searcher(cfg)
    configs = [s.suggest(f"t{i}") for i in range(14)]
    runs = [(c["baseline"], c["base_width"]) for c in configs[:12]]
    assert sorted(runs) == sorted((b, w) for b in cfg.baselines for w in (32, 64, 96))
    assert all("baseline" not in c and c["base_width"] in (32, 64, 96) for c in configs[12:])


@pytest.mark.parametrize("sampler", ["tpe", "gp", "nsga2", "cmaes", "random", "qmc"])
def test_every_sampler_runs_a_few_rounds(sampler: str) -> None:
    s = searcher(config(sampler=sampler, baselines=("uniform",)))
    for i in range(6):
        c = s.suggest(f"t{i}")
        assert c["profile"]
        s.on_trial_complete(f"t{i}", {"val_loss": 4.0 + 0.1 * i, "step": 30})
    assert len(s.study.trials) == 6


@pytest.mark.parametrize("sampler", ["tpe", "gp", "nsga2", "random", "qmc"])
def test_multi_objective_samplers_run(sampler: str) -> None:
    cfg = config(sampler=sampler, objectives=("val_loss", "params"), base_widths=(32, 96), baselines=())
    s = searcher(cfg)
    for i in range(5):
        c = s.suggest(f"t{i}")
        s.on_trial_complete(f"t{i}", {"val_loss": 4.0 - 0.1 * i, "params": 100.0 * c["base_width"], "step": 30})
    assert len(s.study.best_trials) >= 1


@pytest.mark.parametrize("name", ["asha", "hyperband", "none"])
def test_schedulers(name: str) -> None:
    from ray.tune.schedulers import FIFOScheduler

    from tlmsearch.tuning.runner import _scheduler
    from tlmsearch.tuning.scheduler import BaselineKeepingASHA

    sched = _scheduler(config(scheduler=name, grace_steps=10, train=TrainConfig(steps=90, eval_interval=10)))
    if name == "none":
        assert isinstance(sched, FIFOScheduler)
    else:
        assert isinstance(sched, BaselineKeepingASHA)
        # 90 steps, grace 10, reduction factor 3: first rungs at 10 and 30 (a third at 90 would be empty)
        assert sched.max_t == 90 and sched.time_attr == "step"
        assert len(sched.brackets) == (2 if name == "hyperband" else 1)
        assert sched.seed == 3  # seeded from the search: reproducible bracket choice


# ----------------------------------------------------------------------------- resume: the study re-told


def _ran(cfg: SearchConfig, n: int) -> tuple[ProfileSearch, list[dict]]:
    """A search that asked `n` trials and told the first n-2: COMPLETE, PRUNED, FAIL in turn."""
    s = searcher(cfg)
    configs = [s.suggest(f"t{i}") for i in range(n)]
    for i in range(n - 2):
        curve = [{"step": 10, "val_loss": 4.0 + i}, {"step": 20, "val_loss": 3.5 + i}]
        if i % 3 == 0:
            s.on_trial_complete(
                f"t{i}", {"val_loss": 3.0 + i, "step": 30, "curve": [*curve, {"step": 30, "val_loss": 3.0 + i}]}
            )
        elif i % 3 == 1:
            s.on_trial_complete(f"t{i}", {"val_loss": 3.5 + i, "step": 20, "curve": curve})
        else:
            s.on_trial_complete(f"t{i}", {"failed": 1, "reason": "boom", "step": 0})
    return s, configs


def _record_of(cfg: SearchConfig, tid: str, config: dict, trial: optuna.trial.FrozenTrial) -> object:
    from record_fakes import build_record

    curve = [{"step": s, "val_loss": v} for s, v in sorted(trial.intermediate_values.items())]
    step = max(trial.intermediate_values, default=0)
    failed = {"failed": 1, "reason": "boom"} if trial.state.name == "FAIL" else {}
    return build_record(cfg, tid, config, {"step": step, "curve": curve, **failed})


def test_a_resumed_study_is_re_told_from_the_records_alone() -> None:
    """The records (and an interrupted trial's checkpoint) rebuild the study as the running
    search told it: same states, values, intermediate values and params, numbers kept; a trial
    asked but neither recorded nor checkpointed is a FAIL saying it was interrupted."""
    from tlmsearch.tuning.checkpoints import Interrupted
    from tlmsearch.tuning.searcher import INTERRUPTED, Past

    cfg = config(baselines=("uniform",))
    s, configs = _ran(cfg, 8)
    first = s.study.trials
    # t6 was left with a checkpoint; t7 without one; t5 (told) lost its record line
    records = tuple(_record_of(cfg, f"t{i}", configs[i], first[i]) for i in range(5))
    interrupted = Interrupted(config=configs[6], checkpoint="/ck/trial_t6/checkpoint_000001", step=10)
    define = DefineProfile(cfg.space, 4, sweep_of(cfg))
    again = ProfileSearch(define, cfg=cfg, storage=None, baselines=[], past=Past(records, (interrupted,)))
    rebuilt = again.study.trials
    assert [t.state.name for t in rebuilt] == ["COMPLETE", "PRUNED", "FAIL", "COMPLETE", "PRUNED", "FAIL", "RUNNING"]
    for old, new in zip(first[:5], rebuilt[:5], strict=True):
        assert (new.number, new.values, new.user_attrs.get("baseline")) == (
            old.number,
            old.values,
            old.user_attrs.get("baseline"),
        )
        if old.state.name != "FAIL":
            assert new.params == old.params and new.distributions == old.distributions
            assert new.intermediate_values == old.intermediate_values
    assert rebuilt[5].user_attrs["fail_reason"] == INTERRUPTED
    # the interrupted trial runs first, under its number, from its checkpoint
    resumed = again.suggest("u0")
    assert resumed["number"] == 6 and resumed["restore"] == interrupted.checkpoint
    assert resumed["profile"] == configs[6]["profile"]
    fresh = again.suggest("u1")
    assert fresh["number"] == 7 and "restore" not in fresh
    again.on_trial_complete("u0", {"val_loss": 2.0, "step": 30})
    assert again.study.trials[6].state.name == "COMPLETE" and again.study.trials[6].params == first[6].params


def test_re_telling_is_deterministic_and_never_replays_the_first_draws() -> None:
    from tlmsearch.tuning.searcher import Past

    cfg = config(baselines=(), sampler="random")
    s, configs = _ran(cfg, 5)
    records = tuple(_record_of(cfg, f"t{i}", configs[i], s.study.trials[i]) for i in range(3))
    define = DefineProfile(cfg.space, 4, sweep_of(cfg))

    def next_profiles() -> list[str]:
        again = ProfileSearch(define, cfg=cfg, storage=None, baselines=[], past=Past(records))
        return [again.suggest(f"u{i}")["profile"] for i in range(3)]

    assert next_profiles() == next_profiles()
    assert not set(next_profiles()) & {c["profile"] for c in configs}


def test_the_define_by_run_function_tells_the_space_its_family() -> None:
    """A search's define-by-run function passes its architecture to the joint space: Titans is
    never offered a whole-block bowtie (its trial would fail), the Transformer is; a trial
    replayed on resume asks the same family's question."""
    for arch, block in (("titans", False), ("transformer", True)):
        define = DefineProfile("joint", 4, None, arch)
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
        profiles = [define(study.ask())["profile"] for _ in range(40)]
        assert any("mode=block" in p for p in profiles) is block, profiles
        assert any("mode=attention" in p for p in profiles)
        replay = define.replay({"mode": "attention", "start": 1.2, "heads_start": 1.5})
        assert replay is not None and replay[1]["mode"].choices == (
            ("mlp", "attention") if not block else ("mlp", "attention", "block")
        )
