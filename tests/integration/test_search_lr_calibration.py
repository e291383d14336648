"""A search's learning-rate calibration on real Ray: uniform at each rate of the grid with two
paired seeds before the noise floor and the search (the grid widened past an edge when the best
mean lies there), recorded once as "lr" trials, the chosen rate written to search.yaml and
trained by every later trial; a resume after a kill inside the calibration trains only the
missing runs and chooses the same rate. (A study calibrates each architecture by default:
integration/test_study_random_control.py.)

Tiny models (10 steps) on the shared local Ray; slow-marked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tlmsearch.configs.search import SearchConfig, load_run_config
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.rundir.records import read_records

pytestmark = pytest.mark.slow

GRID = [5e-4, 1e-3, 2e-3, 4e-3, 8e-3]  # auto around lr 2e-3


def tiny(tmp_path: Path, **changes: object) -> SearchConfig:
    base = SearchConfig(
        name="lr", runs_dir=str(tmp_path), preset="tiny", model={"n_layers": 4}, trials=2, sampler="random",
        scheduler="none", space="knots", noise_seeds=2, max_concurrent=1, lr_calibration="auto", lr_calibration_seeds=2,
        baselines=("uniform", "cosine:start=1.5,end=0.5"),
        train=TrainConfig(steps=10, eval_interval=5, warmup_steps=2, batch_size=4, eval_windows=4, lr=2e-3),
        data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    return base.replace(**changes)


def _lr_losses(run: Path) -> dict[tuple[float, int], float]:
    return {(float(r.params["lr"]), r.seed): r.metric("val_loss") for r in read_records(run) if r.kind == "lr"}


def _by_hand(losses: dict[tuple[float, int], float]) -> float:
    """The rule worked out independently: the lowest mean of the two seeds, moved to the vertex of the
    parabola in log2 rate through it and its neighbours when it has one on each side."""
    rates = sorted({rate for rate, _ in losses})
    means = [(losses[(r, 0)] + losses[(r, 1)]) / 2 for r in rates]
    b = min(range(len(rates)), key=lambda i: (means[i], rates[i]))
    if b in (0, len(rates) - 1):
        return rates[b]
    y0, y1, y2 = means[b - 1 : b + 2]  # x = -1, 0, 1 around log2(rates[b]) (factor-2 steps)
    return float(format(rates[b] * 2 ** ((y0 - y2) / (2 * (y0 - 2 * y1 + y2))), ".3g"))


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
    rates = sorted({float(r.params["lr"]) for r in lr})
    assert all(any(abs(r - g) < 1e-12 for r in rates) for g in GRID)  # the grid, perhaps widened
    assert sorted(_lr_losses(run)) == sorted((rate, seed) for rate in rates for seed in (0, 1))  # each run once
    assert all(r.full_fidelity and r.steps == 10 and str(r.spec) == "uniform" for r in lr)
    assert all(r.train["lr"] == pytest.approx(r.params["lr"]) for r in lr)  # each trained at its own rate
    assert [r.kind for r in records][: len(lr)] == ["lr"] * len(lr)  # before the noise floor and the search

    chosen = _by_hand(_lr_losses(run))
    cal = json.loads((run / "lr_calibration.json").read_text())
    assert cal["complete"] and cal["chosen"] == pytest.approx(chosen) and cal["configured"] == pytest.approx(2e-3)
    assert cal["rates"] == pytest.approx(rates) and cal["seeds"] == [0, 1] and len(cal["sds"]) == len(rates)
    assert cal["interval"] is not None and cal["interval"][0] <= chosen <= cal["interval"][1]
    assert len(cal["added"]) == len(rates) - len(GRID) <= 4
    cfg = load_run_config(run / "search.yaml")
    assert cfg.train.lr == pytest.approx(chosen) and cfg.lr_calibration == "0.0005,0.001,0.002,0.004,0.008"

    later = [r for r in records if r.kind != "lr"]
    assert sorted(r.kind for r in later) == ["baseline", "baseline", "noise"]
    assert all(r.train["lr"] == pytest.approx(chosen) for r in later)  # noise floor and search at the chosen rate

    optuna_study = open_study(run)
    numbered = {r.number for r in later if r.kind in ("baseline", "sampled") and r.number >= 0}
    assert optuna_study is not None and {t.number for t in optuna_study.trials} == numbered  # no lr trial
    s = status_dict(tlmsearch.load(run))
    assert s["ended"] == 2 and s["lr"] == pytest.approx(chosen) and s["lr_calibration"]["complete"]


def test_resume_after_the_end_trains_nothing(searched: Path) -> None:
    import tlmsearch

    names = ("trials.jsonl", "search.yaml", "lr_calibration.json")
    before = [(searched / name).read_text() for name in names]
    tlmsearch.resume(searched, progress=False)
    assert [(searched / name).read_text() for name in names] == before  # a widened grid and its rate stay


def test_resume_after_a_kill_in_the_calibration_trains_only_the_missing_rates(
    searched: Path, tmp_path: Path, ray_session: None
) -> None:
    """A run directory as a kill after two calibration trials leaves it (search.yaml still at the
    configured rate, two lr records, nothing else): resume trains the other runs (widening as the
    first run did), chooses the same rate, writes it to search.yaml, then runs the noise floor and
    the search at it."""
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
    assert sorted(_lr_losses(run)) == sorted(_lr_losses(searched))  # each run once, the same grid
    assert _lr_losses(run) == pytest.approx(_lr_losses(searched))  # same training, same values
    chosen = load_run_config(searched / "search.yaml").train.lr
    assert load_run_config(run / "search.yaml").train.lr == pytest.approx(chosen)
    assert json.loads((run / "lr_calibration.json").read_text())["configured"] == pytest.approx(2e-3)
    later = [r for r in records if r.kind != "lr"]
    assert len(later) == 3 and all(r.train["lr"] == pytest.approx(chosen) for r in later)
