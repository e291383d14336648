"""StudyConfig holds its searches' settings as one `search` template (a SearchConfig) and writes
study.yaml in that nested layout; the CLI and the Python API keep their flat names."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.study import DEFAULT_ARCHS, SEARCH_FIELDS, StudyConfig, study_search
from tlmsearch.errors import ConfigError


def test_study_yaml_nests_the_search_settings_and_round_trips(tmp_path: Path) -> None:
    cfg = StudyConfig.from_flat({"name": "st", "archs": ("transformer",), "preset": "tiny", "trials": 5, "top_k": 2})
    data = cfg.to_dict()
    assert list(data["search"]) == list(SEARCH_FIELDS) and not set(SEARCH_FIELDS) & set(data)
    assert data["search"]["trials"] == 5 and data["top_k"] == 2
    cfg.save(tmp_path / "study.yaml")
    assert yaml.safe_load((tmp_path / "study.yaml").read_text())["search"]["preset"] == "tiny"
    assert StudyConfig.load(tmp_path / "study.yaml") == cfg == StudyConfig.from_dict(data)
    assert StudyConfig.from_flat(cfg.flat_dict()) == cfg


def test_a_study_keeps_its_own_defaults_not_a_plain_searchs() -> None:
    cfg = StudyConfig()
    assert cfg.archs == DEFAULT_ARCHS and (cfg.search.space, cfg.search.trials) == ("knots", 16)
    assert cfg.search.lr_calibration == "auto" and SearchConfig().lr_calibration == "off"
    assert cfg.search == study_search() and cfg.search.train == SearchConfig().train  # the screening trial
    # a partial `search:` section starts from the study's defaults, not SearchConfig's
    part = StudyConfig.from_dict({"search": {"trials": 4}})
    assert (part.search.trials, part.search.space, part.search.lr_calibration) == (4, "knots", "auto")
    assert StudyConfig.from_flat({"seed": 3}).search.seed == 3


def test_each_architectures_search_is_the_template_with_its_name_arch_and_folder() -> None:
    cfg = StudyConfig.from_flat({"name": "st", "storage": "s3://b/x", "trials": 6, "seed": 7})
    got = cfg.search_config("titans", "/study")
    assert (got.name, got.arch, got.runs_dir, got.storage) == ("titans", "titans", "/study", "s3://b/x/st")
    assert got.lr_calibration_tokens_per_param == 20.0  # the calibration at the verification's length
    back = got.replace(name="", arch="transformer", runs_dir="runs", storage="s3://b/x")
    back = back.replace(lr_calibration_tokens_per_param=0.0)
    assert back == cfg.search
    changed = cfg.with_fields(trials=9, top_k=1)
    assert (changed.search.trials, changed.top_k, changed.search.seed) == (9, 1, 7)


def test_search_settings_at_the_top_level_are_one_line_naming_them(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text("name: old\narchs: [transformer]\npreset: tiny\ntrials: 4\ntop_k: 2\n")
    with pytest.raises(ConfigError) as err:
        StudyConfig.from_dict(yaml.safe_load(path.read_text()), where=str(path))
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{path}: unknown field(s) preset, trials; allowed: name")


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ({"arch": "titans"}, "search: arch cannot be set in a study"),
        ({"objectives": ["val_loss", "params"]}, "search: objectives cannot be set in a study"),
        ({"trials": 0}, "trials=0 must be > 0"),
        ({"sampler": "grid"}, "sampler='grid' is not allowed"),
        ({"trials": "many"}, "search.trials: expected an integer"),
    ],
)
def test_a_bad_search_section_is_refused_by_name(search: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        StudyConfig.from_dict({"search": search})


def test_the_python_api_refuses_a_template_that_sets_what_the_study_sets() -> None:
    with pytest.raises(ConfigError, match="search.arch='titans': a study sets it per architecture"):
        StudyConfig(search=study_search(arch="titans"))
    with pytest.raises(ConfigError, match="search.time_budget_s=5.0: a study sets it to the search default"):
        StudyConfig(search=study_search(time_budget_s=5.0))
    assert StudyConfig(search={"trials": 3}).search == study_search(trials=3)  # type: ignore[arg-type]


def test_the_cli_flags_set_the_template() -> None:
    from tlmsearch.cli import build_parser
    from tlmsearch.cli.study import build_config

    argv = ["study", "--preset", "tiny", "--trials", "5", "--space", "taper", "--top-k", "2", "--seed", "4"]
    cfg = build_config(build_parser().parse_args(argv))
    assert (cfg.search.preset, cfg.search.trials, cfg.search.space, cfg.search.seed, cfg.top_k) == (
        "tiny",
        5,
        "taper",
        4,
        2,
    )
    assert cfg.search.lr_calibration == "auto"  # the study's default, unchanged by other flags
    assert build_config(build_parser().parse_args(["study", "--lr", "1e-3"])).search.lr_calibration == "off"


def test_options_are_set_per_architecture_and_reach_its_search_only() -> None:
    cfg = StudyConfig(
        archs=("transformer", "titans", "hope_attention"),
        options={"titans": {"mem_chunk": 8}, "hope_attention": {"cms_periods": [8, 0]}},
    )
    assert cfg.search_config("titans").model == {"options": {"mem_chunk": 8}}
    assert cfg.search_config("hope_attention").model == {"options": {"cms_periods": [8, 0]}}
    assert cfg.search_config("transformer").model == {}  # no options: the family's defaults
    assert StudyConfig.from_yaml(cfg.to_yaml()) == cfg
    assert cfg.with_fields(trials=4).options == cfg.options


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"archs": ("titans",), "options": {"titans": {"gate": "headwise"}}},
            "options.titans: gate (an option of gated_attention) is not an option of arch='titans'; its options: ",
        ),
        (
            {"archs": ("transformer",), "options": {"titans": {"mem_chunk": 8}}},
            "options: 'titans' is not an architecture of this study; its architectures: transformer",
        ),
        (
            {"search": {"model": {"options": {"mem_chunk": 8}}}},
            "search.model.options: a study sets options per architecture, each family owning its own",
        ),
    ],
)
def test_study_options_of_another_family_or_in_the_template_are_one_line(fields: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        StudyConfig(**fields)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_joint_study_refuses_a_block_profile_for_a_family_without_block_widths(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Titans and Hope-attention build one residual width in every layer: a whole-block control is
    one line, exit 2, before anything trains (their verification would stop the study
    midway); the joint space itself works there (it draws no block mode for them), and the set's
    other points pass."""
    from tlmsearch.cli import main

    args = ["study", "--preset", "tiny", "--space", "joint", "--runs-dir", str(tmp_path), "--dry-run", "--quiet"]
    assert main([*args, "--controls", "joint"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "controls: joint:mode=block,ratio=0.3,position=0.75 moves the block width, which arch='titans'" in err
    assert "(families with block widths: transformer, gated_attention)" in err
    with pytest.raises(ConfigError, match="controls: joint:mode=block,ratio=0.5 .*arch='hope_attention'"):
        StudyConfig.from_flat({"archs": ("hope_attention",), "controls": ("uniform", "joint:block,ratio=0.5")})
    others = ("joint:mode=mlp,start=1.5,end=0.5", "joint:mode=attention,heads_start=1.5,heads_end=0.5")
    assert StudyConfig.from_flat({"space": "joint", "controls": others}).archs == DEFAULT_ARCHS
    assert StudyConfig.from_flat({"archs": ("transformer", "gated_attention"), "controls": ("joint",)})
