"""verify, compare and ladder at a depth where named profiles build one model (cosine and linear
1.5 -> 0.5 at 2 layers): refused in one line before anything trains, or, told to go on, one
candidate trained once under all its names (`configs.identity`). Nothing here trains: the runs
are faked at `run_fixed`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from analysis_fakes import BUDGET, record

from tlmsearch.cli import main
from tlmsearch.configs.presets import preset
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.records import RUN_LAYOUT

COSINE, LINEAR, BOWTIE = "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5", "bowtie:ratio=0.3,position=0.75"
TWO = BUDGET.replace(n_layers=2)  # tiny's own depth: base width 64, widths multiples of 8


def _two_layer_run(run_dir: Path) -> Path:
    """A finished search of the tiny preset (2 layers): the baselines and two sampled profiles, one
    of which (knots 3 -> 1) builds cosine's model [96, 32]."""
    recs = [
        record("b0", "uniform", 2.30, kind="baseline", baseline="uniform", budget=TWO),
        record("b1", COSINE, 2.25, kind="baseline", baseline=COSINE, budget=TWO),
        record("s0", "knots:k0=3,k1=1", 2.20, params={"k0": 3.0, "k1": 1.0}, budget=TWO),
        record("s1", "knots:k0=1,k1=2", 2.40, params={"k0": 1.0, "k1": 2.0}, budget=TWO),
    ]
    run_dir.mkdir(parents=True)
    shape = preset("tiny")
    with (run_dir / "trials.jsonl").open("w") as f:
        for r in recs:
            model = shape.model_config("transformer", tuple(r["widths"])).to_dict()
            f.write(json.dumps({**r, "model": model, "layout": RUN_LAYOUT}) + "\n")
    (run_dir / "search.yaml").write_text("arch: transformer\npreset: tiny\nspace: knots\n")
    return run_dir


def _no_training(monkeypatch: pytest.MonkeyPatch, module: str) -> list[Any]:
    trained: list[Any] = []

    def fake(run_dir: Any, cfg: Any, items: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        trained.extend(items)
        return []

    monkeypatch.setattr(f"{module}.run_fixed", fake)
    return trained


def test_verify_refuses_two_layers_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tlmsearch.tuning.verify import verify

    run = _two_layer_run(tmp_path / "run")
    trained = _no_training(monkeypatch, "tlmsearch.tuning.verify")
    with pytest.raises(ConfigError) as err:
        verify(run, top_k=1, seeds=2, progress=False)
    text = str(err.value)
    assert "\n" not in text and f"{COSINE} and {LINEAR} are [96, 32]" in text and f"uniform and {BOWTIE}" in text
    assert "2 layers: 1 free MLP width, the knots space 1 degree of freedom" in text
    assert main(["verify", str(run), "--top-k", "1", "--seeds", "2", "--no-report"]) == 2
    err_text = capsys.readouterr().err
    assert len(err_text.strip().splitlines()) == 1 and "--allow-collapsed" in err_text and "Traceback" not in err_text
    assert trained == [] and not (run / "verify.json").exists()


def test_verify_told_to_go_on_trains_each_model_once_under_its_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tlmsearch.tuning.verify import verify

    run = _two_layer_run(tmp_path / "run")
    trained = _no_training(monkeypatch, "tlmsearch.tuning.verify")
    result = verify(run, top_k=1, seeds=2, progress=False, allow_collapsed=True)
    # the search's best (knots 3 -> 1) is cosine's model: trained as cosine; linear is cosine too, bowtie uniform
    runs = sorted((str(t.spec), t.seed) for t in trained)
    assert runs == sorted((p, s) for p in (COSINE, "uniform", "cosine:start=0.5,end=1.5") for s in (1, 2))
    by_label = {p.label: p.aliases for p in result.planned}
    assert by_label[COSINE] == ("knots:k0=3,k1=1", LINEAR) and by_label["uniform"] == (BOWTIE,)
    doc = json.loads((run / "verify.json").read_text())
    assert doc["aliases"] == {COSINE: ["knots:k0=3,k1=1", LINEAR], "uniform": [BOWTIE]}


def test_compare_refuses_or_trains_the_merged_candidate_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tlmsearch.tuning.compare import compare

    trained = _no_training(monkeypatch, "tlmsearch.tuning.compare")
    options = dict(preset="tiny", seeds=2, steps=2, runs_dir=str(tmp_path / "runs"), progress=False)
    with pytest.raises(ConfigError, match=rf"compare: cosine and {LINEAR} are \[96, 32\], one model"):
        compare(["uniform", "cosine", LINEAR], **options)
    assert not (tmp_path / "runs").exists() and trained == []
    result = compare(["uniform", "cosine", LINEAR], **options, allow_collapsed=True, name="c")
    once = sorted((p, s) for p in ("uniform", "cosine") for s in (0, 1))
    assert sorted((str(t.spec), t.seed) for t in trained) == once
    doc = json.loads((result.run_dir / "compare.json").read_text())
    assert doc["profiles"] == ["uniform", "cosine", LINEAR] and doc["aliases"] == {"cosine": [LINEAR]}


def test_the_compare_command_refuses_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compare", "--preset", "tiny", "--families", "cosine", LINEAR, "--runs-dir", str(tmp_path), "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--allow-collapsed" in err and not any(tmp_path.iterdir())


def test_a_ladder_refuses_a_point_where_its_profiles_collapse(tmp_path: Path) -> None:
    from tlmsearch.ladders.config import LadderConfig
    from tlmsearch.tuning.ladder import start_ladder

    points = ("tiny@1", "tiny@2")  # the literature's frame, crown and bowtie are uniform at 2 layers
    cfg = LadderConfig(points=points, runs_dir=str(tmp_path), lr_calibration="off")
    with pytest.raises(
        ConfigError, match=r"ladder point tiny@1: uniform and frame:.* are \[64, 64\], one model"
    ) as err:
        start_ladder(cfg, progress=False)
    assert (
        "\n" not in str(err.value) and "2 layers: 1 free MLP width;" in str(err.value) and not any(tmp_path.iterdir())
    )
    cfg.replace(allow_collapsed=True).check_shapes()  # told to go on: nothing to refuse
    four = LadderConfig(points=("tiny:n_layers=5@1", "tiny:n_layers=6@1"), profiles=(LINEAR,), lr_calibration="off")
    four.check_shapes()


def test_verify_trains_and_records_its_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tlmsearch.tuning.verify import verify

    run = _two_layer_run(tmp_path / "run")
    trained = _no_training(monkeypatch, "tlmsearch.tuning.verify")
    ref = "linear:start=1.2,end=0.8"  # [80, 48] at 2 layers: a model of its own
    verify(run, top_k=1, seeds=2, progress=False, allow_collapsed=True, reference=ref)
    assert {(str(t.spec), t.seed) for t in trained} >= {(ref, 1), (ref, 2), (COSINE, 1), (COSINE, 2)}
    assert json.loads((run / "verify.json").read_text())["reference"] == ref


def test_a_study_and_a_ladder_carry_their_reference_to_verify(tmp_path: Path) -> None:
    from tlmsearch.configs.study import StudyConfig
    from tlmsearch.ladders.config import LadderConfig

    study = StudyConfig.from_flat(dict(archs=("transformer",), preset="tiny", model={"n_layers": 4}, reference=LINEAR))
    assert study.named_profiles[:2] == (LINEAR, COSINE) and StudyConfig.from_dict(study.to_dict()) == study
    with pytest.raises(ConfigError, match="unknown profile family 'cosin'"):
        StudyConfig(reference="cosin")
    ladder = LadderConfig(points=("tiny:n_layers=5@1", "tiny:n_layers=6@1"), profiles=(), reference=LINEAR)
    assert ladder.named_profiles[0] == LINEAR
    ladder.check_shapes()
