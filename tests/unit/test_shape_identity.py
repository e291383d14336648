"""Profiles that differ: candidates are identified by the model they build, not by their labels.

At 2 layers the paper's cosine 1.5 -> 0.5 and the linear taper 1.5 -> 0.5 build the same model
(both are 1.5x and 0.5x the base width), so they are one candidate; a study that names both at
that depth is refused in one line before anything trains, unless told to go on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tlmsearch
from tlmsearch.configs.identity import candidates, check_distinct_shapes, merged_name, shape_key
from tlmsearch.configs.resolve import trial_shape
from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.study import StudyConfig
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec

COSINE, LINEAR = "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5"


def _cfg(n_layers: int) -> SearchConfig:
    return SearchConfig(preset="tiny", model={"n_layers": n_layers})


def test_cosine_and_linear_are_one_candidate_at_two_layers() -> None:
    cfg = _cfg(2)
    cos, lin = (trial_shape(cfg, ProfileSpec.parse(t))[2] for t in (COSINE, LINEAR))
    assert cos.mlp_widths == lin.mlp_widths == (96, 32)  # tiny: base width 64, 1.5 x 64 and 0.5 x 64
    assert shape_key(cos) == shape_key(lin)
    found = candidates(cfg, ["uniform", COSINE, LINEAR])
    assert [c.names for c in found] == [("uniform",), (COSINE, LINEAR)]
    assert found[1].name == f"{COSINE} = {LINEAR}" == merged_name([COSINE, LINEAR, COSINE])
    assert found[1].widths == (96, 32)


def test_they_differ_at_four_layers() -> None:
    # cosine 1.5, 1.25, 0.75, 0.5 x 64 = 96, 80, 48, 32; linear 1.5, 1.17, 0.83, 0.5 x 64 on multiples of 8
    found = candidates(_cfg(4), [COSINE, LINEAR])
    assert [c.widths for c in found] == [(96, 80, 48, 32), (96, 72, 56, 32)]
    check_distinct_shapes(_cfg(4), [COSINE, LINEAR], what="study")  # nothing to refuse


def test_a_study_naming_both_at_two_layers_is_refused_in_one_line(tmp_path: Path, monkeypatch) -> None:
    import tlmsearch.tuning.study as study_runner

    def trained(*args: object, **kwargs: object) -> None:
        raise AssertionError("the study got past its check: it would have trained")

    monkeypatch.setattr(study_runner, "create_run_dir", trained)
    with pytest.raises(ConfigError) as err:
        tlmsearch.study(
            name="s2", runs_dir=str(tmp_path), archs=("transformer",), preset="tiny",
            controls=(LINEAR,), progress=False,
        )  # fmt: skip
    text = str(err.value)
    assert "\n" not in text
    assert COSINE in text and LINEAR in text and "2 layers" in text and "allow_collapsed" in text
    assert not any(tmp_path.iterdir())


def test_the_study_command_refuses_it_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tlmsearch.cli import main

    argv = ["study", "--preset", "tiny", "--archs", "transformer", "--controls", LINEAR, "--runs-dir", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--allow-collapsed" in err and COSINE in err
    assert not any(tmp_path.iterdir())


def test_allow_collapsed_runs_them_as_one_candidate() -> None:
    cfg = StudyConfig.from_flat(dict(archs=("transformer",), preset="tiny", controls=(LINEAR,), allow_collapsed=True))
    assert cfg.allow_collapsed
    merged = cfg.named_candidates("transformer")
    assert [c.name for c in merged if len(c.names) > 1] == [f"{COSINE} = {LINEAR}"]


JOINT_COSINE = "joint:mode=mlp,start=1.5,end=0.5"
JOINT_BLOCK, BOWTIE = "joint:mode=block,ratio=0.3,position=0.75", "bowtie:ratio=0.3,position=0.75"


def test_names_of_one_model_at_every_depth_are_merged_without_a_refusal() -> None:
    """`joint:mode=mlp,start=1.5,end=0.5` is cosine 1.5 -> 0.5 by definition and `joint:mode=mlp`
    is uniform: more layers never part them, so naming both (`verify --controls joint` beside the
    default cosine and uniform) is no depth problem: one candidate each, no refusal, at 4 layers
    as at 8."""
    for n_layers in (4, 8):
        named = [COSINE, "uniform", JOINT_COSINE, "joint:mode=mlp"]
        found = check_distinct_shapes(_cfg(n_layers), named, what="verify")
        assert [c.names for c in found] == [(COSINE, JOINT_COSINE), ("uniform", "joint:mode=mlp")]


def test_a_collapse_of_this_depth_beside_an_alias_is_still_refused() -> None:
    # at 4 layers the whole-block bowtie's bottleneck rounds away: its MLP widths are the MLP
    # bowtie's, 88, 56, 24, 88, and its block widths the preset's; at 16 layers they part
    found = candidates(_cfg(4), [BOWTIE, JOINT_BLOCK])
    assert [c.widths for c in found] == [(88, 56, 24, 88)] and found[0].key[3] == ()
    assert len(candidates(_cfg(16), [BOWTIE, JOINT_BLOCK])) == 2
    with pytest.raises(ConfigError) as err:
        check_distinct_shapes(_cfg(4), [COSINE, JOINT_COSINE, BOWTIE, JOINT_BLOCK], what="verify")
    text = str(err.value)
    assert f"{BOWTIE} and {JOINT_BLOCK} are [88, 56, 24, 88]" in text and JOINT_COSINE not in text
