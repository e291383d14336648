"""Who takes `--pack` beyond verify and the ladder, without training: the search's noise floor
(`SearchConfig.pack`, `tlmsearch search --pack`), compare (`--pack`, `CompareOptions.pack`), a
study (its `pack` reaches every architecture's search and its transfer) and the rate check.
The records they give are checked against unpacked runs in tests/integration/test_pack_users.py
and test_verify_pack.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from study_fakes import tiny_study

from tlmsearch.cli import build_parser, main
from tlmsearch.cli.compare import compare_arguments
from tlmsearch.cli.search import build_config
from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.studies.files import TRANSFER_KIND
from tlmsearch.tuning import runner
from tlmsearch.tuning import study as study_mod


def tiny(**changes: Any) -> SearchConfig:
    base = SearchConfig(preset="tiny", train=TrainConfig(steps=4), data=DataConfig(corpus="pydoc"), noise_seeds=4)
    return base.replace(**changes)


def test_a_search_config_packs_its_noise_floor_and_an_old_one_reads_off(tmp_path: Path) -> None:
    assert SearchConfig().pack == "off" and tiny(pack="auto").pack == "auto"
    raw = tiny(pack="on").to_dict()
    assert SearchConfig.from_dict(raw).pack == "on"
    raw.pop("pack")  # a search.yaml written before --pack
    assert SearchConfig.from_dict(raw).pack == "off"
    with pytest.raises(ConfigError, match=r"pack='sometimes' is not allowed; choose one of: auto, on, off"):
        tiny(pack="sometimes")
    parser = build_parser()
    assert build_config(parser.parse_args(["search", "--pack", "auto"])).pack == "auto"
    assert build_config(parser.parse_args(["search"])).pack == "off"


def test_compare_takes_pack_and_refuses_a_bad_mode_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    argv = ["compare", "--families", "uniform", "cosine"]
    assert compare_arguments(parser.parse_args(argv))["pack"] == "off"
    assert compare_arguments(parser.parse_args([*argv, "--pack", " On"]))["pack"] == "on"
    assert main([*argv, "--pack", "sometimes"]) == 2
    err = capsys.readouterr().err
    assert "--pack='sometimes' is not allowed; choose one of: auto, on, off" in err and "Traceback" not in err


def test_compare_refuses_a_bad_mode_before_anything_trains(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tlmsearch.tuning.compare import compare

    monkeypatch.setattr("tlmsearch.tuning.compare.run_fixed", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(ConfigError, match="pack"):
        compare(["uniform", "cosine"], preset="tiny", seeds=2, runs_dir=tmp_path, pack="yes", progress=False)
    assert not list(tmp_path.iterdir())  # no run directory left behind


SEEDS = [1, 2, 3, 4, 5]  # noise_seeds 6: seed 0 is the search's own uniform
NOISE_CASES = [("off", "tiny", []), ("on", "cpu-xs", SEEDS), ("auto", "tiny", [1, 2, 3, 4]), ("auto", "cpu-xs", [])]


@pytest.mark.parametrize(("pack", "preset", "packed"), NOISE_CASES)
def test_the_noise_floor_trains_the_seeds_pack_chooses_as_packs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pack: str, preset: str, packed: list[int]
) -> None:
    """Packed where `pack` says (auto's measured rule on one slot: a pack of 4 at tiny, the fifth
    seed alone; cpu-xs measured slower), the rest as fixed Tune trials."""
    got: dict[str, list[int]] = {"packs": [], "fixed": []}

    def packs(run_dir: Path, cfg: SearchConfig, configs: list[dict], groups: Any, kind: str, *a: Any) -> dict:
        assert kind == "noise" and all(configs[i]["profile"] == "uniform" for index, _ in groups for i in index)
        got["packs"] += [configs[i]["seed"] for index, _ in groups for i in index]
        return {}

    def fixed(cfg: SearchConfig, run_dir: Path, root: str, configs: list[dict[str, Any]], kind: str, *a: Any) -> dict:
        assert kind == "noise"
        got["fixed"] += [c["seed"] for c in configs]
        return {}

    monkeypatch.setattr(runner, "run_packs", packs)
    monkeypatch.setattr(runner, "fit_fixed", fixed)
    monkeypatch.setattr(runner, "write_noise_floor", lambda *a: None)
    cfg = tiny(preset=preset, pack=pack, cpus_per_trial=1, max_concurrent=1, noise_seeds=6)
    assert runner.run_noise_trials(cfg, tmp_path, str(tmp_path), progress=False) == 5
    assert got == {"packs": packed, "fixed": [s for s in SEEDS if s not in packed]}


def test_packed_and_separate_records_come_back_by_their_trials_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fit_configs` keys every record by its config's "index" (a batch's item order), whether
    its trial trained in a pack (`run_packs` answers by position) or alone (`fit_fixed`)."""
    configs = [runner.fixed_config("uniform", s, "verify", 10 + s) for s in SEEDS]  # indices 11..15

    def packs(run_dir: Path, cfg: SearchConfig, configs: list[dict], groups: Any, *a: Any) -> dict:
        return {i: f"packed seed {configs[i]['seed']}" for index, _ in groups for i in index}

    def fixed(cfg: SearchConfig, run_dir: Path, root: str, configs: list[dict[str, Any]], *a: Any) -> dict:
        return {c["index"]: f"alone seed {c['seed']}" for c in configs}

    monkeypatch.setattr(runner, "run_packs", packs)
    monkeypatch.setattr(runner, "fit_fixed", fixed)
    cfg = tiny(pack="auto", cpus_per_trial=1, max_concurrent=1)  # a pack of 4, the fifth alone (above)
    got = runner.fit_configs(cfg, tmp_path, str(tmp_path), configs, "verify", progress=False)
    assert got == {
        11: "packed seed 1",
        12: "packed seed 2",
        13: "packed seed 3",
        14: "packed seed 4",
        15: "alone seed 5",
    }


def test_a_study_packs_each_search_and_its_transfer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tiny_study(tmp_path, pack="on")
    assert {cfg.search_config(a).pack for a in cfg.archs} == {"on"}  # each search's noise floor
    assert tiny_study(tmp_path).search_config("transformer").pack == "off"
    calls: list[tuple[str, str, int]] = []
    monkeypatch.setattr(
        study_mod, "run_fixed", lambda run_dir, c, items, kind, **kw: calls.append((kind, kw["pack"], len(items)))
    )
    study_dir = tmp_path / "st"
    (study_dir / "transformer").mkdir(parents=True)
    best = {"knots:k0=3,k1=1": ProfileSpec.parse("knots:k0=3,k1=1").to_dict()}
    assert study_mod._transfer(cfg, study_dir, "transformer", best, None) == 4  # it and cosine, 2 seeds each
    assert calls == [(TRANSFER_KIND, "on", 4)]
