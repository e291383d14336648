"""A search's noise floor on real Ray: uniform with extra seeds before the search, recorded once
as "noise" trials, never told to the sampler, the floor in noise_floor.json / status / best(),
and a resume (after a clean end, after a kill during the noise trials) that re-runs nothing.

Tiny models on the shared local Ray, plus one SIGKILLed subprocess; slow-marked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import kill_group, read_lines, reaped, wait_for_first_record

from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.rundir.records import read_records

pytestmark = pytest.mark.slow


def tiny(tmp_path: Path, **changes: object) -> SearchConfig:
    base = SearchConfig(
        name="nf", runs_dir=str(tmp_path), preset="tiny", model={"n_layers": 4}, trials=3, sampler="random",
        scheduler="none", space="knots", noise_seeds=3, max_concurrent=1,
        baselines=("cosine:start=1.5,end=0.5", "uniform"),
        train=TrainConfig(steps=10, eval_interval=5, warmup_steps=2, batch_size=4, eval_windows=4),
        data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    return base.replace(**changes)


def _losses(run: Path, kind: str) -> dict[int, float]:
    return {r.seed: r.metric("val_loss") for r in read_records(run) if r.kind == kind}


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory, ray_session: None) -> Path:
    import tlmsearch

    tmp = tmp_path_factory.mktemp("noise")
    return tlmsearch.search(tiny(tmp), progress=False).run_dir


def test_the_floor_is_measured_once_outside_the_sampler(searched: Path) -> None:
    from optuna_journal import open_study

    import tlmsearch
    from tlmsearch.cli.status import status_dict

    run = searched
    records = read_records(run)
    noise = [r for r in records if r.kind == "noise"]
    # seed 0 is the search's own uniform baseline; seeds 1 and 2 are the extra noise trials
    assert sorted(r.seed for r in noise) == [1, 2]
    assert all(r.full_fidelity and r.steps == 10 and r.number == -1 and str(r.spec) == "uniform" for r in noise)
    assert sum(r.kind in ("baseline", "sampled") for r in records) == 3
    optuna_study = open_study(run)
    numbered = {r.number for r in records if r.kind in ("baseline", "sampled") and r.number >= 0}
    assert optuna_study is not None and {t.number for t in optuna_study.trials} == numbered  # no noise trial

    floor = json.loads((run / "noise_floor.json").read_text())
    uniform0 = [r for r in records if r.kind == "baseline" and str(r.spec) == "uniform"][0]
    assert floor["seeds"] == [0, 1, 2] and floor["n"] == 3 and floor["complete"]
    noise_values = [v for _, v in sorted(_losses(run, "noise").items())]
    assert floor["values"] == pytest.approx([uniform0.metric("val_loss"), *noise_values])
    assert floor["sd"] > 0

    study = tlmsearch.load(run)
    assert study.noise_floor().sd == pytest.approx(floor["sd"])
    best = study.best(3)
    assert bool(best["tie"].iloc[0]) is True  # the best ties with itself
    assert best["gap_sd"].iloc[1] == pytest.approx(best["gap"].iloc[1] / floor["sd"])
    s = status_dict(study)
    assert s["noise"] == 2 and s["ended"] == 3 and s["noise_floor"]["sd"] == pytest.approx(floor["sd"])


def test_resume_after_the_end_trains_nothing(searched: Path) -> None:
    import tlmsearch

    before = (searched / "trials.jsonl").read_text()
    tlmsearch.resume(searched, progress=False)
    assert (searched / "trials.jsonl").read_text() == before


def test_resume_after_a_kill_in_the_noise_trials_trains_only_what_is_missing(
    searched: Path, tmp_path: Path, ray_session: None
) -> None:
    """A run directory as a kill after the first noise trial leaves it (search.yaml, one record,
    no Tune state, no journal): resume trains the other noise seed and the whole search."""
    import tlmsearch

    run = tmp_path / "nf"
    run.mkdir()
    shutil.copy(searched / "search.yaml", run / "search.yaml")
    first = next(line for line in (searched / "trials.jsonl").read_text().splitlines() if '"kind": "noise"' in line)
    (run / "trials.jsonl").write_text(first + "\n")
    tlmsearch.resume(run, progress=False)
    records = read_records(run)
    assert records[0].trial_id == json.loads(first)["trial_id"]  # kept, never rewritten
    assert sorted(r.seed for r in records if r.kind == "noise") == [1, 2]  # each noise seed once
    assert sum(r.kind in ("baseline", "sampled") for r in records) == 3
    assert _losses(run, "noise") == pytest.approx(_losses(searched, "noise"))  # same training, same values
    assert json.loads((run / "noise_floor.json").read_text())["n"] == 3


def test_sigkill_during_the_noise_trials_then_resume(tmp_path: Path) -> None:
    """The CLI end to end: `search --noise-seeds 3` without uniform among its baselines (every floor
    seed is a noise trial), one trial at a time, SIGKILLed once the first noise trial is recorded."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    run = tmp_path / "run"
    args = [
        "--preset", "tiny", "--model", "n_layers=4", "--corpus", "pydoc", "--steps", "10", "--eval-interval", "5",
        "--batch-size", "4", "--train", "eval_windows=4", "--train", "warmup_steps=2", "--trials", "2",
        "--baseline", "cosine:start=1.5,end=0.5", "--sampler", "random", "--scheduler", "none",
        "--max-concurrent", "1", "--noise-seeds", "3", "--quiet",
    ]  # fmt: skip
    cmd = [sys.executable, "-m", "tlmsearch", "search", *args, "--runs-dir", str(tmp_path), "--name", "run"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    with reaped(proc):
        wait_for_first_record(proc, run / "trials.jsonl", poll=0.2)
        kill_group(proc)
    before = read_lines(run / "trials.jsonl")
    assert before and before[0]["kind"] == "noise"
    done = subprocess.run(
        [sys.executable, "-m", "tlmsearch", "resume", str(run), "--quiet", "--json"],
        env=env, capture_output=True, timeout=400,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    records = read_lines(run / "trials.jsonl")
    ids = [r["trial_id"] for r in records]
    assert len(ids) == len(set(ids)) and ids[: len(before)] == [r["trial_id"] for r in before]
    assert sorted(r["seed"] for r in records if r["kind"] == "noise") == [0, 1, 2]
    assert sum(r["kind"] in ("baseline", "sampled") for r in records) == 2
    status = json.loads(done.stdout)
    assert status["noise_floor"]["n"] == 3 and status["noise_floor"]["seeds"] == [0, 1, 2]


def test_resume_after_a_kill_before_tune_saved_its_state(searched: Path, tmp_path: Path, ray_session: None) -> None:
    """A run directory as a kill leaves it after the journal opened the first trials but before
    Tune wrote any state (or copied without `tune/`): every noise record, no search record, a
    journal with trials opened and never told. Resume writes the journal anew from the records
    (none left RUNNING) and trains each baseline once."""
    import optuna
    from optuna.trial import TrialState
    from optuna_journal import open_study

    import tlmsearch
    from tlmsearch.tuning.searcher import STUDY_NAME, open_storage

    run = tmp_path / "nf"
    run.mkdir()
    shutil.copy(searched / "search.yaml", run / "search.yaml")
    lines = (searched / "trials.jsonl").read_text().splitlines()
    (run / "trials.jsonl").write_text("".join(line + "\n" for line in lines if '"kind": "noise"' in line))
    started = optuna.create_study(study_name=STUDY_NAME, storage=open_storage(str(run)))
    started.ask(), started.ask()  # the first trials the killed driver opened, never told
    opened = open_study(run)
    assert opened is not None and any(t.state == TrialState.RUNNING for t in opened.trials)

    tlmsearch.resume(run, progress=False)
    records = read_records(run)
    assert sorted(r.seed for r in records if r.kind == "noise") == [1, 2]  # kept, not re-run
    search = [r for r in records if r.kind in ("baseline", "sampled")]
    assert len(search) == 3 and len({r.trial_id for r in search}) == 3
    assert sorted(str(r.spec) for r in search if r.kind == "baseline") == ["cosine:start=1.5,end=0.5", "uniform"]
    study = open_study(run)
    assert study is not None
    assert not [t for t in study.trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    recorded = {r.number for r in search}
    assert all(t.state == TrialState.FAIL for t in study.trials if t.number not in recorded)
