"""SearchConfig validation and the CLI's one-line errors (no Ray started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlmsearch.cli import main
from tlmsearch.configs.resolve import default_base_width, sweep_levels, sweep_widths, trial_shape
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.tuning import SearchConfig
from tlmsearch.tuning.runner import resolve


def tiny(**changes: object) -> SearchConfig:
    base = SearchConfig(
        preset="tiny",
        model={"n_layers": 4},
        trials=8,
        train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5),
        data=DataConfig(corpus="pydoc"),
    )
    return base.replace(**changes)


def test_round_trip_yaml_and_json() -> None:
    cfg = tiny(objectives=("val_loss", "params"), base_widths=(32, 96), sampler="nsga2")
    assert SearchConfig.from_dict(cfg.to_dict()) == cfg
    assert SearchConfig.from_yaml(cfg.to_yaml()) == cfg
    assert SearchConfig.from_json(cfg.to_json()) == cfg


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"sampler": "bogus"}, "sampler='bogus' is not allowed"),
        ({"scheduler": "pbt"}, "scheduler='pbt' is not allowed"),
        ({"sampler": "cmaes", "objectives": ("val_loss", "tokens_per_s")}, "single objective"),
        ({"objectives": ("val_loss", "params")}, "needs a budget sweep"),
        ({"objectives": ("params",)}, "first objective must be val_loss"),
        ({"objectives": ("val_loss", "val_loss")}, "repeats"),
        ({"objectives": ("val_loss", "flops")}, "objectives='flops' is not allowed"),
        ({"base_widths": (64, 32)}, "low < high"),
        ({"base_widths": (32, 64), "base_width": 48}, "not both"),
        ({"grace_steps": 100}, "grace_steps=100 must not exceed"),
        ({"baselines": ("nosuchfamily",)}, "unknown profile family"),
        ({"reduction_factor": 1}, "reduction_factor=1"),
        ({"cpus_per_trial": 0}, "cpus_per_trial=0"),
    ],
)
def test_invalid_configs_name_the_field(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        tiny(**changes)


def test_resolve_names_the_run_and_checks_space_and_budget() -> None:
    cfg = resolve(tiny())
    assert cfg.name.startswith("transformer-taper-tpe-")
    with pytest.raises(ConfigError, match="unknown search space"):
        resolve(tiny(space="nope"))
    with pytest.raises(ConfigError, match="base_width=12 is not a multiple"):
        resolve(tiny(base_width=12))  # tiny widths are multiples of 8


@pytest.mark.parametrize("sampler", ["gp", "cmaes", "nsga2"])
def test_samplers_that_ignore_pruned_trials_refuse_early_stopping(sampler: str) -> None:
    for scheduler in ("asha", "hyperband"):
        with pytest.raises(ConfigError, match=f"sampler='{sampler}' learns only from completed trials"):
            resolve(tiny(sampler=sampler, scheduler=scheduler))
    assert resolve(tiny(sampler=sampler, scheduler="none")).sampler == sampler
    for other in ("tpe", "random", "qmc"):  # TPE ranks pruned trials; random and QMC learn nothing at all
        assert resolve(tiny(sampler=other, scheduler="asha")).scheduler == "asha"


def test_default_grace_is_the_first_evaluation_after_a_third_of_the_steps() -> None:
    assert tiny(train=TrainConfig(steps=300, eval_interval=50)).grace == 100
    assert tiny(train=TrainConfig(steps=100, eval_interval=10)).grace == 40
    assert tiny(train=TrainConfig(steps=30, eval_interval=10)).grace == 10
    assert tiny(train=TrainConfig(steps=20, eval_interval=50)).grace == 20  # capped at the steps
    assert tiny(grace_steps=20, train=TrainConfig(steps=300, eval_interval=50)).grace == 20


def test_trial_shape_is_exactly_on_budget() -> None:
    from tlmsearch.profiles import ProfileSpec

    cfg = tiny()
    budget, widths, model = trial_shape(cfg, ProfileSpec.parse("cosine:start=1.5,end=0.5"))
    assert sum(widths) == budget.total == 4 * 64 and model.n_layers == 4 and model.mlp_widths == widths
    sweep = tiny(base_widths=(30, 100))  # three budgets by default, on multiples of 8
    assert sweep_widths(sweep) == (32, 96, 32) and sweep_levels(sweep) == (32, 64, 96)
    assert default_base_width(sweep) == 64
    assert sweep_levels(tiny(base_widths=(32, 100), budget_levels=4)) == (32, 56, 80)  # spacing 64 / 3 rounds up to 24
    assert sweep_levels(tiny(base_widths=(32, 48), budget_levels=5)) == (32, 40, 48)  # every multiple of 8
    with pytest.raises(ConfigError, match="budget_levels=1 must be >= 2"):
        tiny(base_widths=(32, 96), budget_levels=1)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--space", "nope"], "unknown search space 'nope'"),
        (["--sampler", "cmaes", "--objectives", "val_loss,tokens_per_s"], "single objective"),
        (["--base-width", "12"], "base_width=12 is not a multiple"),
        (["--base-widths", "9", "15", "--objectives", "val_loss,params"], "fewer than two multiples of 8"),
        (["--cpus-per-trial", "4096"], "cpus_per_trial=4096 but this machine has"),
        (["--gpus-per-trial", "1"], "gpus_per_trial=1 but this machine has"),
        (["--gpus-per-trial", "0.25"], r"gpus_per_trial=0.25 but this machine has 0 GPUs \(no CUDA device\)"),
        (["--cpus-per-trial", "64"], "cpus_per_trial=64 but this machine has"),
        (["--storage", "ftp://host/dir"], "storage='ftp://host/dir': unsupported URI scheme 'ftp'"),
        (["--storage", "s3://"], r"storage='s3://' names no bucket"),
        (["--storage", "file://relative/dir"], "a file:// URI needs an absolute path"),
        (["--model", "nonsense=3"], "unknown ModelConfig field"),
        (["--sampler", "gp"], "sampler='gp' learns only from completed trials.*--scheduler none or --sampler tpe"),
        (["--sampler", "cmaes", "--scheduler", "hyperband"], "sampler='cmaes' learns only from completed"),
        (["--objectives", "val_loss,tokens_per_s"], "objective 'tokens_per_s' is refused: .* load noise"),
    ],
)
def test_cli_invalid_config_is_one_line_exit_2(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    import torch

    if "--gpus-per-trial" in flags and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    from tlmsearch.training.hardware import cpu_count

    if flags[-2:] == ["--cpus-per-trial", "64"] and cpu_count() >= 64:
        pytest.skip("this machine has 64 CPUs")
    argv = ["search", "--preset", "tiny", "--corpus", "pydoc", "--runs-dir", str(tmp_path), "--quiet", *flags]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("tlmsearch search: error:")
    import re

    assert re.search(message, err), err


@pytest.mark.slow
def test_cli_dry_run_prints_a_loadable_config(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["search", "--preset", "tiny", "--corpus", "pydoc", "--steps", "40", "--trials", "5", "--name", "x"]
    argv += ["--objectives", "val_loss,params", "--base-widths", "32", "96", "--sampler", "nsga2"]
    argv += ["--scheduler", "none", "--dry-run"]  # NSGA-II learns only from complete trials
    assert main(argv) == 0
    cfg = SearchConfig.from_yaml(capsys.readouterr().out)
    assert cfg.train.steps == 40 and cfg.trials == 5 and cfg.objectives == ("val_loss", "params")
    assert cfg.base_widths == (32, 96) and cfg.data.corpus == "pydoc" and cfg.name == "x"


def test_cli_refuses_to_overwrite_an_existing_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").mkdir()
    tiny().save(tmp_path / "taken" / "search.yaml")
    argv = ["search", "--preset", "tiny", "--corpus", "pydoc", "--runs-dir", str(tmp_path), "--name", "taken"]
    assert main(argv) == 2
    assert "already holds a search; resume it" in capsys.readouterr().err


def test_run_names_are_plain_folder_names() -> None:
    with pytest.raises(ConfigError, match="run name"):
        tiny(name="../escape")


def test_status_of_a_missing_run_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", str(tmp_path)]) == 2
    assert "is not a search run directory" in capsys.readouterr().err
