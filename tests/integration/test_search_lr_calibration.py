"""A search's learning-rate calibration on real Ray: uniform at each rate of the grid before the
noise floor and the search, recorded once as "lr" trials, the chosen rate written to search.yaml
and trained by every later trial; a resume after a kill inside the calibration trains only the
missing rates and chooses the same rate. (A study calibrates each architecture by default:
integration/test_study_random_control.py.)

Tiny models (10 steps) on the shared local Ray; slow-marked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tlmsearch.configs.base import DataConfig, TrainConfig
from tlmsearch.configs.search import SearchConfig, load_run_config
from tlmsearch.rundir.records import read_records

pytestmark = pytest.mark.slow

GRID = [5e-4, 1e-3, 2e-3, 4e-3, 8e-3]  # auto around lr 2e-3


def tiny(tmp_path: Path, **changes: object) -> SearchConfig:
    base = SearchConfig(
        name="lr", runs_dir=str(tmp_path), preset="tiny", model={"n_layers": 4}, trials=2, sampler="random",
        scheduler="none", space="knots", noise_seeds=2, max_concurrent=1, lr_calibration="auto",
        baselines=("uniform", "cosine:start=1.5,end=0.5"),
        train=TrainConfig(steps=10, eval_interval=5, warmup_steps=2, batch_size=4, eval_windows=4, lr=2e-3),
        data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    return base.replace(**changes)


def _lr_losses(run: Path) -> dict[float, float]:
    return {float(r.params["lr"]): r.metric("val_loss") for r in read_records(run) if r.kind == "lr"}


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory, ray_session: None) -> Path:
    import tlmsearch

    tmp = tmp_path_factory.mktemp("lr")
    return tlmsearch.search(tiny(tmp), progress=False).run_dir


def test_the_calibration_runs_first_and_every_later_trial_trains_at_its_rate(searched: Path) -> None:
    from optuna_journal import open_study

    import tlmsearch
    from tlmsearch.cli.status import status_dict

    run = searched
    records = read_records(run)
    lr = [r for r in records if r.kind == "lr"]
    assert sorted(float(r.params["lr"]) for r in lr) == pytest.approx(GRID)
    assert all(r.full_fidelity and r.steps == 10 and r.seed == 0 and str(r.spec) == "uniform" for r in lr)
    assert all(r.train["lr"] == pytest.approx(r.params["lr"]) for r in lr)  # each trained at its own rate
    assert [r.kind for r in records][:5] == ["lr"] * 5  # before the noise floor and the search

    losses = _lr_losses(run)
    chosen = min(losses, key=lambda rate: (losses[rate], rate))
    cal = json.loads((run / "lr_calibration.json").read_text())
    assert cal["complete"] and cal["chosen"] == pytest.approx(chosen) and cal["configured"] == pytest.approx(2e-3)
    assert cal["rates"] == pytest.approx(GRID)
    assert (cal["edge"] is not None) == (chosen in (GRID[0], GRID[-1]))
    cfg = load_run_config(run / "search.yaml")
    assert cfg.train.lr == pytest.approx(chosen) and cfg.lr_calibration == "0.0005,0.001,0.002,0.004,0.008"

    later = [r for r in records if r.kind != "lr"]
    assert sorted(r.kind for r in later) == ["baseline", "baseline", "noise"]
    assert all(r.train["lr"] == pytest.approx(chosen) for r in later)  # noise floor and search at the chosen rate
    uniform = next(r for r in later if r.kind == "baseline" and str(r.spec) == "uniform")
    assert uniform.metric("val_loss") == pytest.approx(losses[chosen])  # the same run as its calibration trial

    optuna_study = open_study(run)
    numbered = {r.number for r in later if r.kind in ("baseline", "sampled") and r.number >= 0}
    assert optuna_study is not None and {t.number for t in optuna_study.trials} == numbered  # no lr trial
    s = status_dict(tlmsearch.load(run))
    assert s["ended"] == 2 and s["lr"] == pytest.approx(chosen) and s["lr_calibration"]["complete"]


def test_resume_after_the_end_trains_nothing(searched: Path) -> None:
    import tlmsearch

    before = (searched / "trials.jsonl").read_text()
    tlmsearch.resume(searched, progress=False)
    assert (searched / "trials.jsonl").read_text() == before


def test_resume_after_a_kill_in_the_calibration_trains_only_the_missing_rates(
    searched: Path, tmp_path: Path, ray_session: None
) -> None:
    """A run directory as a kill after two calibration trials leaves it (search.yaml still at the
    configured rate, two lr records, nothing else): resume trains the three other rates, chooses
    the same rate, writes it to search.yaml, then runs the noise floor and the search at it."""
    import tlmsearch

    run = tmp_path / "lr"
    run.mkdir()
    started = load_run_config(searched / "search.yaml")
    started.replace(train=started.train.replace(lr=2e-3)).save(run / "search.yaml")
    first = [line for line in (searched / "trials.jsonl").read_text().splitlines() if '"kind": "lr"' in line][:2]
    (run / "trials.jsonl").write_text("".join(line + "\n" for line in first))
    tlmsearch.resume(run, progress=False)

    records = read_records(run)
    assert [r.trial_id for r in records[:2]] == [json.loads(line)["trial_id"] for line in first]  # kept
    assert sorted(float(r.params["lr"]) for r in records if r.kind == "lr") == pytest.approx(GRID)  # each once
    assert _lr_losses(run) == pytest.approx(_lr_losses(searched))  # same training, same values
    chosen = load_run_config(searched / "search.yaml").train.lr
    assert load_run_config(run / "search.yaml").train.lr == pytest.approx(chosen)
    assert json.loads((run / "lr_calibration.json").read_text())["configured"] == pytest.approx(2e-3)
    later = [r for r in records if r.kind != "lr"]
    assert len(later) == 3 and all(r.train["lr"] == pytest.approx(chosen) for r in later)
