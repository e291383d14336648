"""`workers_per_trial`: the setting, its refusals, what a trial of several workers holds and how
many run at once, the flags of every command that trains trials, and what a record says (no Ray
started; the Ray Train run itself is tested in tests/integration/test_workers_per_trial.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlmsearch.cli import build_parser
from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.trial import trial_spec
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.announce import slots
from tlmsearch.tuning.resources import workers_problem


def cfg(**kw: object) -> SearchConfig:
    base: dict[str, object] = dict(
        name="w", preset="tiny", trials=1, noise_seeds=0, gpus_per_trial=0, cpus_per_trial=1,
        train=TrainConfig(steps=4, batch_size=4), data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    return SearchConfig(**{**base, **kw})  # type: ignore[arg-type]


def test_refusals_name_the_setting_and_what_is_allowed() -> None:
    with pytest.raises(ConfigError, match=r"workers_per_trial=8 exceeds train.batch_size=4: every worker reads"):
        cfg(workers_per_trial=8)
    with pytest.raises(ConfigError, match="gpus_per_trial=0.5 with workers_per_trial=2: each data-parallel worker"):
        cfg(workers_per_trial=2, gpus_per_trial=0.5)
    with pytest.raises(ConfigError, match="workers_per_trial"):
        cfg(workers_per_trial=0)
    with pytest.raises(ConfigError, match="workers_per_trial"):
        LadderConfig(points=("tiny@5", "cpu-xs@5"), workers_per_trial=2, train=TrainConfig(batch_size=1))
    assert cfg(workers_per_trial=4).workers_per_trial == 4
    assert cfg(workers_per_trial=2, gpus_per_trial=1).gpu_share == 1.0


def test_a_trial_of_two_workers_holds_both_and_fewer_run_at_once() -> None:
    two = cfg(workers_per_trial=2, cpus_per_trial=2)
    assert slots(two, cpus=8) == 2 and slots(cfg(cpus_per_trial=2), cpus=8) == 4
    assert slots(two.replace(max_concurrent=1), cpus=8) == 1
    assert slots(cfg(workers_per_trial=2, gpus_per_trial=1), cpus=64, gpus=8) == 4
    spec = trial_spec(two, {"profile": "uniform", "seed": 3})
    assert spec.workers == 2 and spec.resources == {"CPU": 2.0}  # per worker
    assert trial_spec(cfg(), {"profile": "uniform"}).workers == 1


def test_the_workers_must_fit_the_nodes_together() -> None:
    nodes = [{"CPU": 2.0}, {"CPU": 3.0}]
    assert workers_problem(nodes, 3, 1.0, 0.0) is None  # 2 + 3 CPUs: five 1-CPU workers fit
    assert workers_problem(nodes, 2, 2.0, 0.0) is None  # one on each node
    assert workers_problem(nodes, 3, 2.0, 0.0) == (
        "workers_per_trial=3 with cpus_per_trial=2 and gpus_per_trial=0 per worker, but the nodes hold only 2 "
        "such workers at once"
    )
    assert workers_problem([{"CPU": 16.0, "GPU": 2.0}], 4, 1.0, 1.0) is not None
    assert workers_problem([{"CPU": 16.0, "GPU": 2.0}] * 2, 4, 1.0, 1.0) is None


def test_every_command_that_trains_trials_takes_the_flag() -> None:
    from tlmsearch.cli.compare import compare_arguments
    from tlmsearch.cli.search import build_config
    from tlmsearch.cli.study import build_config as study_config

    parser = build_parser()
    flag = ["--workers-per-trial", "2"]
    assert build_config(parser.parse_args(["search", "--preset", "tiny", *flag])).workers_per_trial == 2
    assert study_config(parser.parse_args(["study", "--preset", "tiny", *flag])).search.workers_per_trial == 2
    assert compare_arguments(parser.parse_args(["compare", "--families", "uniform", *flag]))["workers_per_trial"] == 2
    assert parser.parse_args(["verify", "runs/x", *flag]).workers_per_trial == 2
    assert parser.parse_args(["verify", "runs/x"]).workers_per_trial is None  # the search's
    ladder = parser.parse_args(["ladder", "run", "--points", "tiny@5", "cpu-xs@5", *flag])
    from tlmsearch.cli.ladder import build_config as ladder_config

    assert ladder_config(ladder).workers_per_trial == 2


def test_a_record_says_how_many_workers_trained_it() -> None:
    assert TrialRecord(trial_id="a").workers == 1  # one worker: the record as it always was
    assert TrialRecord(trial_id="b", metrics={"val_loss": 3.0, "workers": 2.0}).workers == 2


def test_a_run_resumes_on_another_number_of_workers(tmp_path: Path) -> None:
    """The numbers do not depend on the worker count, so `resume --workers-per-trial` may change it;
    a count the batch cannot feed is refused and changes nothing."""
    from tlmsearch.configs.search import load_run_config
    from tlmsearch.rundir.layout import SEARCH_CONFIG
    from tlmsearch.tuning.resume_resources import change_resources

    run = tmp_path / "w"
    run.mkdir()
    cfg(runs_dir=str(tmp_path)).save(run / SEARCH_CONFIG)
    assert change_resources(run, workers_per_trial=2) == [f"{run}: workers-per-trial 1 -> 2"]
    assert load_run_config(run / SEARCH_CONFIG).workers_per_trial == 2
    with pytest.raises(ConfigError, match="workers_per_trial=5 exceeds train.batch_size=4"):
        change_resources(run, workers_per_trial=5)
    assert load_run_config(run / SEARCH_CONFIG).workers_per_trial == 2
    args = build_parser().parse_args(["resume", str(run), "--workers-per-trial", "3"])
    assert args.workers_per_trial == 3
