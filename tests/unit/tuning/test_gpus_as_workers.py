"""`--gpus-per-trial N` with a whole N > 1: each trial trains on N data-parallel workers of one
GPU each (`workers_per_trial` N, `gpus_per_trial` 1), on every command that takes the flag and
in a resume; "auto", 0 and fractions up to 1 stay as they were; a number above 1 that is not
whole, or N beside another worker count, is refused in one line (exit 2 on the command line)
before Ray starts. CUDA is mocked: no GPU is needed."""

from __future__ import annotations

from pathlib import Path

import pytest
from refusals import no_training, one_line

from tlmsearch.cli import build_parser, main
from tlmsearch.configs.search import SearchConfig, load_run_config
from tlmsearch.configs.trial import trial_spec
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.rundir.layout import SEARCH_CONFIG
from tlmsearch.tuning.announce import slots
from tlmsearch.tuning.resources import check_resources, trial_device_kind
from tlmsearch.tuning.resume_resources import change_resources


def cfg(**kw: object) -> SearchConfig:
    base: dict[str, object] = dict(
        name="g", preset="tiny", trials=1, noise_seeds=0, cpus_per_trial=1,
        train=TrainConfig(steps=4, batch_size=8), data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    return SearchConfig(**{**base, **kw})  # type: ignore[arg-type]


def test_n_gpus_are_n_workers_of_one_gpu_and_fractions_stay() -> None:
    four = cfg(gpus_per_trial=4)
    assert (four.gpus_per_trial, four.workers_per_trial) == (1.0, 4)
    assert (cfg(gpus_per_trial="2").gpus_per_trial, cfg(gpus_per_trial="2").workers_per_trial) == (1.0, 2)
    assert (cfg(gpus_per_trial=4, workers_per_trial=4).workers_per_trial) == 4  # both said, the same
    for gpus, share in ((0.25, 0.25), (1, 1.0), (0, 0.0)):
        c = cfg(gpus_per_trial=gpus)
        assert (c.gpus_per_trial, c.workers_per_trial) == (share, 1)
    assert cfg(gpus_per_trial="auto").gpus_per_trial == "auto"
    assert SearchConfig.from_dict(four.to_dict()) == four  # written out as 1 GPU x 4 workers, read back the same
    ladder = LadderConfig(points=("tiny@5", "cpu-xs@5"), gpus_per_trial=2, train=TrainConfig(batch_size=4))
    assert (ladder.gpus_per_trial, ladder.workers_per_trial) == (1.0, 2)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"gpus_per_trial": 1.5}, "gpus_per_trial=1.5: above 1 it must be a whole number N (N data-parallel workers"),
        ({"gpus_per_trial": "2.5"}, "gpus_per_trial=2.5: above 1 it must be a whole number N"),
        ({"gpus_per_trial": 4, "workers_per_trial": 2}, "gpus_per_trial=4 with workers_per_trial=2: 4 GPUs per trial"),
        ({"gpus_per_trial": 16}, "workers_per_trial=16 exceeds train.batch_size=8"),
        ({"gpus_per_trial": -2}, "gpus_per_trial"),
    ],
)
def test_nonsense_is_refused_naming_what_is_allowed(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        cfg(**fields)


def test_a_trial_of_n_gpus_holds_one_gpu_per_worker_on_a_mocked_gpu_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tlmsearch.training.hardware.cpu_count", lambda: 16)
    four = cfg(gpus_per_trial=4)
    spec = trial_spec(four, {"profile": "uniform", "seed": 0})
    assert spec.workers == 4 and spec.resources == {"CPU": 1.0, "GPU": 1.0}
    assert trial_device_kind(four) == "cuda"
    assert slots(four, cpus=16, gpus=8) == 2  # two trials of four GPUs on eight
    monkeypatch.setattr("tlmsearch.tuning.resources.local_gpus", lambda: 4)
    check_resources(four)  # four GPUs here: fits
    monkeypatch.setattr("tlmsearch.tuning.resources.local_gpus", lambda: 2)
    with pytest.raises(ConfigError, match="workers_per_trial=4 with cpus_per_trial=1 and gpus_per_trial=1 per worker"):
        check_resources(four)
    monkeypatch.setattr("tlmsearch.tuning.resources.local_gpus", lambda: 0)
    with pytest.raises(ConfigError) as e:  # a CPU machine: the message speaks of the trial the user asked for
        check_resources(four)
    assert str(e.value) == (
        "gpus_per_trial=1 but this machine has 0 GPUs (no CUDA device) "
        "(per worker: a trial of 4 workers asks for 4 GPUs and 4 CPUs)"
    )


def test_every_command_that_takes_the_flag_reads_it_so() -> None:
    from tlmsearch.cli.compare import compare_arguments
    from tlmsearch.cli.ladder import build_config as ladder_config
    from tlmsearch.cli.search import build_config
    from tlmsearch.cli.study import build_config as study_config
    from tlmsearch.configs.compare import CompareOptions, compare_config

    parser = build_parser()
    flag = ["--gpus-per-trial", "2"]
    search = build_config(parser.parse_args(["search", "--preset", "tiny", *flag]))
    assert (search.gpus_per_trial, search.workers_per_trial) == (1.0, 2)
    study = study_config(parser.parse_args(["study", "--preset", "tiny", *flag])).search
    assert (study.gpus_per_trial, study.workers_per_trial) == (1.0, 2)
    ladder = ladder_config(parser.parse_args(["ladder", "run", "--points", "tiny@5", "cpu-xs@5", *flag]))
    assert (ladder.gpus_per_trial, ladder.workers_per_trial) == (1.0, 2)
    options = compare_arguments(parser.parse_args(["compare", "--families", "uniform", *flag]))
    compared, _ = compare_config(["uniform"], CompareOptions.of(**options))
    assert (compared.gpus_per_trial, compared.workers_per_trial) == (1.0, 2)


@pytest.mark.parametrize("command", [["search", "--preset", "tiny"], ["compare", "--families", "uniform"]])
def test_the_command_line_refuses_1_5_in_one_line(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    no_training(monkeypatch)
    monkeypatch.setattr("tlmsearch.tuning.compare.run_fixed", lambda *a, **k: pytest.fail("it trained"))
    code = main([*command, "--gpus-per-trial", "1.5", "--runs-dir", str(tmp_path), "--name", "g"])
    assert code == 2
    assert "gpus_per_trial=1.5: above 1 it must be a whole number N" in one_line(capsys)
    assert not (tmp_path / "g").exists()


def test_a_resume_on_n_gpus_continues_on_n_workers(tmp_path: Path) -> None:
    run = tmp_path / "g"
    run.mkdir()
    cfg(gpus_per_trial=1, runs_dir=str(tmp_path)).save(run / SEARCH_CONFIG)
    assert change_resources(run, gpus_per_trial=4) == [f"{run}: workers-per-trial 1 -> 4"]
    now = load_run_config(run / SEARCH_CONFIG)
    assert (now.gpus_per_trial, now.workers_per_trial) == (1.0, 4)
    with pytest.raises(ConfigError, match="gpus_per_trial=1.5: above 1 it must be a whole number"):
        change_resources(run, gpus_per_trial=1.5)
    with pytest.raises(ConfigError, match="gpus_per_trial=2 with workers_per_trial=4"):
        change_resources(run, gpus_per_trial=2, workers_per_trial=4)
    assert load_run_config(run / SEARCH_CONFIG).workers_per_trial == 4  # refusals changed nothing
    assert change_resources(run, gpus_per_trial=2) == [f"{run}: workers-per-trial 4 -> 2"]
