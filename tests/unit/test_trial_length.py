"""Trial length in tokens per (non-embedding) parameter: the step count derived once, everywhere.

`config.steps_for_tokens_per_param` is exact arithmetic on the number as written, rounded up;
each command that trains (train, search, verify, compare, study) and `plan` derive the steps
from it through its own resolution path, refuse it beside an explicit --steps, and print how
the steps were derived. No Ray: config resolution and dry runs only, plus one tiny `train`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tlmsearch.cli import build_parser, main
from tlmsearch.configs.resolve import resolve_trial_length, trial_length_line, trial_shape
from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.base import (
    DataConfig,
    TrainConfig,
    steps_for_tokens_per_param,
    trial_length_text,
    with_tokens_per_param,
)
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.models import count_params
from tlmsearch.profiles import ProfileSpec

TINY = ["--preset", "tiny", "--corpus", "pydoc"]


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))


def uniform_counts(cfg: SearchConfig) -> tuple[int, int]:
    """(non-embedding parameters, tokens per step) of `cfg`'s trials."""
    model = trial_shape(cfg, ProfileSpec.parse("uniform"))[2]
    return count_params(model).non_embedding, cfg.train.tokens_per_step * model.seq_len


# ----------------------------------------------------------------------------- the derivation


@pytest.mark.parametrize(
    ("tpp", "non_embedding", "tokens_per_step", "steps"),
    [
        (20, 430_000, 2048, 4200),  # 4,199.2 rounds up
        (1, 1000, 512, 2),  # 1.95 rounds up
        (1.1, 3000, 1100, 3),  # exactly 3; the float product is 3.0000000000000004
        (20.1, 10_000, 201, 1000),  # exactly 1000 (201/10 x 10,000 / 201)
        (0.1, 20_480, 2048, 1),
        (1e-9, 10, 4096, 1),  # at least one step
    ],
)
def test_steps_are_exact_and_rounded_up(tpp: float, non_embedding: int, tokens_per_step: int, steps: int) -> None:
    assert steps_for_tokens_per_param(tpp, non_embedding, tokens_per_step) == steps
    assert steps * tokens_per_step >= tpp * non_embedding * (1 - 1e-12)


@pytest.mark.parametrize("bad", [0, 0.0, -1, -0.5, math.nan, math.inf])
def test_refuses_what_is_no_trial_length(bad: float) -> None:
    with pytest.raises(ConfigError, match="tokens_per_param=.* must be"):
        steps_for_tokens_per_param(bad, 1000, 512)


def test_the_config_field() -> None:
    assert TrainConfig().tokens_per_param == 0.0  # off: steps given directly
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ConfigError, match="tokens_per_param"):
            TrainConfig(tokens_per_param=bad)
    with pytest.raises(ConfigError, match="more than 1,000,000,000"):
        steps_for_tokens_per_param(1e6, 10**7, 1)
    train = TrainConfig(steps=7)
    assert with_tokens_per_param(train, 1000, 32) is train  # 0: nothing derived
    derived = with_tokens_per_param(TrainConfig(tokens_per_param=2.0), 1000, 32)
    assert derived.steps == math.ceil(2000 / (16 * 32)) and derived.tokens_per_param == 2.0


def test_the_printed_derivation() -> None:
    text = trial_length_text(20, 430_000, 2048, 4200)
    assert (
        text == "20 tokens per parameter of 0.43M non-embedding parameters = 8.6M tokens = 4,200 steps of 2,048 tokens"
    )


# ----------------------------------------------------------------------------- each command


def test_train_derives_and_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    from tlmsearch.cli.train import resolve_configs

    model, train, _, _ = resolve_configs(build_parser().parse_args(["train", *TINY, "--tokens-per-param", "5"]))
    n = count_params(model).non_embedding
    assert train.steps == math.ceil(5 * n / (16 * model.seq_len)) and train.tokens_per_param == 5
    code = main(["train", *TINY, "--tokens-per-param", "5", "--steps", "10"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "--steps 10 and --tokens-per-param 5 both set the trial length" in err


def test_steps_alone_replace_a_config_files_trial_length(tmp_path: Path) -> None:
    from tlmsearch.cli.train import resolve_configs

    path = tmp_path / "run.yaml"
    path.write_text("model: {preset: tiny}\ntrain: {tokens_per_param: 5}\n")
    _, train, _, _ = resolve_configs(build_parser().parse_args(["train", "--config", str(path), "--steps", "7"]))
    assert (train.steps, train.tokens_per_param) == (7, 0.0)
    _, again, _, _ = resolve_configs(build_parser().parse_args(["train", "--config", str(path)]))
    assert again.tokens_per_param == 5 and again.steps != 300


def test_search_dry_run_derives_the_steps(capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    assert main(["search", *TINY, "--tokens-per-param", "3", "--trials", "4", "--dry-run", "--quiet"]) == 0
    cfg = SearchConfig.from_dict(yaml.safe_load(capsys.readouterr().out))
    n, per_step = uniform_counts(cfg)
    assert cfg.train.tokens_per_param == 3 and cfg.train.steps == math.ceil(3 * n / per_step)
    assert resolve_trial_length(cfg) == cfg  # resolved once: resolving again changes nothing
    line = trial_length_line(cfg, "search x")
    assert line == f"search x: {trial_length_text(3, n, per_step, cfg.train.steps)}"
    code = main(["search", *TINY, "--tokens-per-param", "3", "--train", "steps=50", "--dry-run", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "both set the trial length" in err


def test_grace_steps_are_checked_against_the_derived_steps() -> None:
    cfg = SearchConfig(preset="tiny", grace_steps=500, train=TrainConfig(tokens_per_param=20))
    n, per_step = uniform_counts(cfg)
    assert math.ceil(20 * n / per_step) >= 500  # more steps than the default 300: accepted once derived
    assert resolve_trial_length(cfg).grace == 500
    with pytest.raises(ConfigError, match="grace_steps=500 must not exceed the .* steps that tokens_per_param=1 gives"):
        resolve_trial_length(cfg.replace(train=TrainConfig(tokens_per_param=1)))


def test_a_budget_sweep_takes_its_middle_budget_and_says_so() -> None:
    cfg = SearchConfig(
        preset="tiny", base_widths=(32, 128), train=TrainConfig(tokens_per_param=4), data=DataConfig(corpus="pydoc")
    )
    resolved = resolve_trial_length(cfg)
    n, per_step = uniform_counts(resolved)  # the middle budget (where the baselines run)
    assert resolved.train.steps == math.ceil(4 * n / per_step)
    line = trial_length_line(resolved)
    assert line is not None and "at the middle budget;" in line and "tokens per parameter across the sweep" in line


def test_verify_derives_from_the_search_or_the_flags() -> None:
    from tlmsearch.cli.verify import verify_arguments
    from tlmsearch.configs.verify import retrain_config

    search = resolve_trial_length(
        SearchConfig(preset="tiny", train=TrainConfig(tokens_per_param=2, eval_interval=10), data=DataConfig())
    )
    n, per_step = uniform_counts(search)

    def retrain(*argv: str) -> TrainConfig:
        kw = verify_arguments(build_parser().parse_args(["verify", "runs/x", *argv]))
        return retrain_config(search, seeds=2, **kw)[0].train

    assert search.train.steps == math.ceil(2 * n / per_step)
    # no length given: the deciding length, 20 tokens per parameter (config.deciding_train)
    assert (retrain().steps, retrain().tokens_per_param) == (math.ceil(20 * n / per_step), 20.0)
    assert retrain("--tokens-per-param", "4").steps == math.ceil(4 * n / per_step)  # given: as given
    at_25 = resolve_trial_length(search.replace(train=search.train.replace(tokens_per_param=25)))
    assert retrain_config(at_25, seeds=1)[0].train.steps == at_25.train.steps  # already deciding: kept
    by_steps = search.replace(train=search.train.replace(tokens_per_param=0.0, steps=33))
    assert retrain_config(by_steps, seeds=1)[0].train.steps == 33  # a search given in steps: its steps
    assert (retrain("--steps", "7").steps, retrain("--steps", "7").tokens_per_param) == (7, 0.0)
    with pytest.raises(ConfigError, match="both set the trial length"):
        retrain("--steps", "7", "--tokens-per-param", "4")


def test_compare_and_study_take_the_flag() -> None:
    from tlmsearch.cli.compare import compare_arguments
    from tlmsearch.cli.study import build_config as study_config
    from tlmsearch.studies.cost import steps_equivalent
    from tlmsearch.tuning.compare import compare

    kw = compare_arguments(build_parser().parse_args(["compare", "--families", "uniform", "--tokens-per-param", "6"]))
    assert kw["train"]["tokens_per_param"] == 6
    with pytest.raises(ConfigError, match="both set the trial length"):
        compare_arguments(
            build_parser().parse_args(["compare", "--families", "uniform", "--tokens-per-param", "6", "--steps", "9"])
        )
    with pytest.raises(UserError, match="both set the trial length"):  # the Python API too, before anything
        compare(["uniform", "cosine"], steps=9, train={"tokens_per_param": 6.0})

    args = ["study", "--archs", "transformer,titans", "--preset", "tiny", "--tokens-per-param", "6"]
    study = study_config(build_parser().parse_args(args))
    assert study.search.train.tokens_per_param == 6
    steps = {}
    for arch in study.archs:  # each architecture its own count, so its own step count
        search = resolve_trial_length(study.search_config(arch))
        n, per_step = uniform_counts(search)
        steps[arch] = search.train.steps
        assert steps[arch] == math.ceil(6 * n / per_step)
        assert steps_equivalent(study, arch) >= steps[arch]  # the cost estimate counts the derived steps
    assert steps["transformer"] != steps["titans"]
    from tlmsearch.studies.cost import estimate

    text = estimate(study, n_slots=1, calibration={}).text()  # each arch's trial length, in its own line
    for arch in study.archs:
        assert "a trial: 6 tokens per parameter of " in text and f"= {steps[arch]:,} steps of " in text
    with pytest.raises(ConfigError, match="both set the trial length"):
        study_config(build_parser().parse_args([*args, "--steps", "5"]))


def test_plan_prices_tokens_per_param(capsys: pytest.CaptureFixture[str]) -> None:
    from tlmsearch.cli.plan import config_from_args
    from tlmsearch.costs.plan import plan

    result = plan(config_from_args(build_parser().parse_args(["plan", "--tokens-per-param", "20", "--trials", "4"])))
    arch = result.archs[0]
    per_step = 16 * 1024  # the 170m preset's tokens per step at the default batch
    assert arch.phases[0].steps == math.ceil(20 * arch.params_non_embedding / per_step)
    assert main(["plan", "--tokens-per-param", "20", "--steps", "100"]) == 2
    assert "--tokens-per-param" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["train", "search", "verify", "compare", "study"])
def test_help_says_which_parameters_count(command: str) -> None:
    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and isinstance(a.choices, dict))
    text = " ".join(sub.choices[command].format_help().split())
    assert "--tokens-per-param" in text and "NON-EMBEDDING parameter (embeddings and the LM head do not count)" in text


def test_train_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A tiny run of 0.25 tokens per parameter: the line printed, the steps run, the regime recorded."""
    monkeypatch.setattr("tlmsearch.training.trainer.matmul_peak", lambda device, dtype, cache_dir=None: 1e11)
    runs = tmp_path / "runs"
    argv = ["train", *TINY, "--tokens-per-param", "0.25", "--threads", "1", "--runs-dir", str(runs)]
    assert main([*argv, "--name", "tpp", "--json"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    m = summary["metrics"]
    steps = summary["train_config"]["steps"]
    assert err.startswith("train: 0.25 tokens per parameter of ") and f"= {steps:,} steps of " in err
    assert m["steps"] == steps and m["tokens_per_param"] == pytest.approx(m["tokens"] / m["params_non_embedding"])
    assert 0.25 <= m["tokens_per_param"] < 0.25 + 16 * 32 / m["params_non_embedding"]  # one step at most above
    assert m["epochs"] > 0 and m["val_tokens"] > 0


def test_quickstart_takes_tokens_per_param(capsys: pytest.CaptureFixture[str]) -> None:
    from tlmsearch.cli.quickstart import quickstart_config

    def config(*argv: str) -> SearchConfig:
        return quickstart_config(build_parser().parse_args(["quickstart", *argv]))

    assert (config().train.steps, config().train.tokens_per_param) == (120, 0.0)  # the default length
    cfg = config("--tokens-per-param", "5")
    n, per_step = uniform_counts(cfg)
    assert cfg.train.steps == math.ceil(5 * n / per_step) and cfg.train.tokens_per_param == 5
    assert cfg.train.eval_interval == cfg.grace_steps == cfg.train.steps // 3  # evaluations every third
    assert resolve_trial_length(cfg) == cfg
    for argv, said in (
        (["--tokens-per-param", "5", "--steps", "10"], "both set the trial length"),
        (["--tokens-per-param", "0"], "--tokens-per-param=0.0 must be > 0"),
    ):
        assert main(["quickstart", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and said in err, err


def test_the_study_report_and_readme_state_the_trial_length() -> None:
    from tlmsearch.studies.report import length_text

    assert length_text({"steps": 300}) == "300 steps"  # a summary written before the field: its steps
    assert length_text({"steps": 300, "tokens_per_param": 0.0}) == "300 steps"
    assert length_text({"steps": 300, "tokens_per_param": 20.0}) == (
        "20 tokens per parameter (non-embedding; steps per architecture)"
    )
