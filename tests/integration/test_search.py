"""Real searches on the shared local Ray (2 CPUs, tests/integration/conftest.py): tiny model, real text.

The CI-sized search (8 trials, TPE + ASHA, one trial that raises) and a multi-objective budget
sweep whose Pareto front is checked against brute force.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import optuna
import pytest

from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.data import prepare
from tlmsearch.profiles import ProfileSpec
from tlmsearch.tuning import FixedTrial, SearchConfig, load, run_fixed, search
from tlmsearch.tuning.searcher import OPTUNA_LOG, STUDY_NAME, open_storage

FAULTY_SPACE = '''
"""knots, except that trial number 4 asks for a profile the budget cannot hold (it raises in training)."""
from search_spaces import knots
from tlmsearch.profiles import ProfileSpec

NAME = "knots-with-a-fault"


def sample(trial, n_layers):
    spec = knots.sample(trial, n_layers)
    if trial.number == 4:
        return ProfileSpec(family="free", params={"l0": 0.0, "l1": 0.0})  # 2 logits for 4 layers
    return spec


encode = knots.encode
'''


pytestmark = pytest.mark.usefixtures("ray_session")  # the shared local Ray of tests/integration (2 CPUs)


def tiny(tmp_path: Path, **changes: object) -> SearchConfig:
    base = SearchConfig(
        name="ci", runs_dir=str(tmp_path), preset="tiny", model={"n_layers": 4}, trials=8, grace_steps=10,
        noise_seeds=0,
        train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5, batch_size=8, eval_windows=8),
        data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    return base.replace(**changes)


@pytest.mark.slow
def test_ci_search_records_every_trial_baselines_first_and_survives_a_raising_trial(tmp_path: Path) -> None:
    space = tmp_path / "faulty.py"
    space.write_text(FAULTY_SPACE)
    cfg = tiny(tmp_path, space=str(space), sampler="tpe", scheduler="asha")
    study = search(cfg, progress=False)
    run = tmp_path / "ci"
    for name in ("search.yaml", "environment.json", OPTUNA_LOG, "trials.jsonl", "tune"):
        assert (run / name).exists(), name
    assert SearchConfig.load(run / "search.yaml") == cfg.replace(gpus_per_trial=cfg.gpu_share)  # "auto" written out

    records = study.records
    assert len(records) == 8 and len({r.trial_id for r in records}) == 8
    # the baselines were the first trials started (two at a time, so in either order within a pair)
    by_start = sorted(records, key=lambda r: r.started_at)
    assert sorted(r.baseline for r in by_start[:4]) == sorted(cfg.baselines)
    assert {r.kind for r in by_start[4:]} == {"sampled"}
    # early stopping never cuts a baseline short: they are the references of the verdict
    assert all(r.status == "complete" and r.full_fidelity for r in by_start[:4])
    assert sorted(r.number for r in records if r.kind == "sampled") == [2, 3, 4, 5]

    failed = [r for r in records if r.status == "failed"]
    assert [r.number for r in failed] == [4]
    assert "ConfigError" in failed[0].reason and "one logit per layer" in failed[0].reason

    for r in records:
        assert r.max_steps == 30 and r.seed == cfg.seed and r.started_at and r.ended_at and r.wall_s > 0
        if r.status == "failed":
            continue
        assert sum(r.widths) == r.budget["n_layers"] * r.budget["base_width"] == 4 * 64
        assert r.shape and r.curve and r.curve[-1]["step"] == r.steps
        assert math.isfinite(r.metrics["val_loss"]) and r.metrics["params_total"] > 0
        assert r.full_fidelity == (r.status == "complete") == (r.steps == 30)
        assert ProfileSpec.from_dict(r.profile).widths(study_budget(r)) == r.widths
        # the worker returned what it trained: the exact model (vocabulary set by the tokenizer) and configs
        assert r.model_config is not None and r.model_config.mlp_widths == r.widths
        assert r.model_config.arch == cfg.arch and r.model_config.vocab_size == prepare(cfg.data).vocab_size
        assert r.train["steps"] == 30 and r.train["seed"] == r.seed and r.data == cfg.data.to_dict()
    assert any(r.status == "complete" for r in records)

    # Optuna saw stopped trials as PRUNED and the raising one as FAIL (never COMPLETE with a partial loss)
    ot = optuna.load_study(study_name=STUDY_NAME, storage=open_storage(str(run)))
    state = {t.number: t.state for t in ot.trials}
    for r in records:
        if r.number >= 0:
            expected = {"complete": "COMPLETE", "stopped": "PRUNED", "failed": "FAIL"}[r.status]
            assert state[r.number].name == expected, (r.number, r.status)
    # every evaluation reached Optuna keyed by training step, the one that got a trial stopped too
    by_number = {t.number: t for t in ot.trials}
    for r in records:
        if r.number >= 0 and r.status != "failed":
            assert by_number[r.number].intermediate_values == {int(c["step"]): c["val_loss"] for c in r.curve}
            assert by_number[r.number].value == pytest.approx(r.metrics["val_loss"])  # pruned: its last value
    assert all(max(by_number[r.number].intermediate_values) == r.steps for r in records if r.status == "stopped")

    best = load(run).best(3)
    assert len(best) >= 1 and (best["status"] == "complete").all()


def study_budget(r: object) -> object:
    from tlmsearch.profiles import Budget

    return Budget.from_dict(r.budget)  # type: ignore[attr-defined]


@pytest.mark.slow
def test_budget_sweep_is_fair_to_every_budget_and_its_front_has_only_full_fidelity_trials(tmp_path: Path) -> None:
    cfg = tiny(
        tmp_path, name="sweep", objectives=("val_loss", "params"), base_widths=(32, 128), budget_levels=2,
        baselines=("uniform", "cosine:start=1.5,end=0.5"), trials=10, sampler="tpe", scheduler="asha", seed=1,
    )  # fmt: skip
    study = search(cfg, progress=False)
    assert len(study.records) == 10
    widths = {r.budget["base_width"] for r in study.records}
    assert widths <= {32, 128}
    for width in (32, 128):  # baselines at every budget, all at full fidelity
        at = [r for r in study.records if r.budget["base_width"] == width]
        assert sorted(r.baseline for r in at if r.kind == "baseline") == sorted(cfg.baselines), width
        assert all(r.full_fidelity for r in at if r.kind == "baseline")
        assert any(r.full_fidelity for r in at)
    full = [r for r in study.records if r.full_fidelity]
    points = {r.trial_id: (r.metrics["val_loss"], r.metrics["params_total"]) for r in full}
    brute = {i for i, a in points.items() if not any(b[0] <= a[0] and b[1] <= a[1] and b != a for b in points.values())}
    front = set(study.pareto_front()["trial_id"])
    assert front and front == brute
    assert len({r.metrics["params_total"] for r in full}) == 2  # the sweep really varied the budget
    # optuna-dashboard's front (the journal) holds only full-fidelity trials too
    ot = optuna.load_study(study_name=STUDY_NAME, storage=open_storage(str(tmp_path / "sweep")))
    numbers = {r.number for r in full}
    assert {t.number for t in ot.best_trials} <= numbers


@pytest.mark.slow
def test_run_fixed_appends_full_fidelity_records_in_order(tmp_path: Path) -> None:
    cfg = tiny(tmp_path, name="fixed")
    items = [FixedTrial(spec=ProfileSpec.parse("uniform"), seed=7, name="uniform"),
             FixedTrial(spec=ProfileSpec.parse("cosine:start=1.5,end=0.5"), seed=8)]  # fmt: skip
    records = run_fixed(tmp_path / "fixed", cfg, items, kind="verify", steps=10)
    assert [r.seed for r in records] == [7, 8] and [r.baseline for r in records] == ["uniform", None]
    assert all(r.kind == "verify" and r.full_fidelity and r.steps == r.max_steps == 10 for r in records)
    lines = (tmp_path / "fixed" / "trials.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["trial_id"] for line in lines) == sorted(r.trial_id for r in records)


@pytest.mark.slow
def test_time_budget_records_cut_trials_as_stopped(tmp_path: Path) -> None:
    cfg = tiny(tmp_path, name="budget", trials=12, scheduler="none", time_budget_s=12.0, baselines=("uniform",))
    cfg = cfg.replace(train=cfg.train.replace(steps=400, eval_interval=20))
    study = search(cfg, progress=False)  # no KeyboardInterrupt: running out of time is not an interruption
    assert len(study.records) < 12
    for r in study.records:
        assert r.status in ("complete", "stopped")
        if r.status == "stopped":
            assert r.reason.startswith("time budget of 12 s reached at step")
    ot = optuna.load_study(study_name=STUDY_NAME, storage=open_storage(str(tmp_path / "budget")))
    assert all(t.state.is_finished() for t in ot.trials if t.number in {r.number for r in study.records})
