"""`--pack` beyond verify: the search's noise floor (`SearchConfig.pack`, `tlmsearch search --pack`)
and `tlmsearch compare --pack` give the records of their unpacked runs, each member one record;
a search resumed after losing a packed noise record trains that seed alone again.

Slow: tiny models, 6 steps, through a local Ray (packs are Ray tasks, one trial's CPUs each).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pack_records import assert_same_records, records_of

import tlmsearch
from tlmsearch.cli import main
from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.base import DataConfig, TrainConfig

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("ray_session")]

TRAIN = TrainConfig(steps=6, warmup_steps=2, eval_interval=3, eval_windows=4, batch_size=4)
STEPS = ["--steps", "6", "--warmup-steps", "2", "--eval-interval", "3", "--eval-windows", "4", "--batch-size", "4"]


def noise_search(runs: Path, name: str, pack: str) -> Path:
    """A search that is its noise floor: seeds 1, 2 and 3 of uniform (seed 0 is the search's one
    baseline), two trials at once, so `on` trains them as packs of 2 and 1."""
    cfg = SearchConfig(
        name=name,
        runs_dir=str(runs),
        preset="tiny",
        space="knots",
        sampler="random",
        scheduler="none",
        trials=1,
        noise_seeds=4,
        max_concurrent=2,
        baselines=("uniform",),
        pack=pack,
        train=TRAIN,
        data=DataConfig(corpus="pydoc"),
    )
    return tlmsearch.search(cfg, progress=False).run_dir


def test_the_noise_floor_packs_and_a_resume_trains_only_the_lost_member(tmp_path: Path) -> None:
    off, on = noise_search(tmp_path, "off", "off"), noise_search(tmp_path, "on", "on")
    assert sorted(r["seed"] for r in records_of(on, "noise")) == [1, 2, 3]
    assert_same_records(records_of(off, "noise"), records_of(on, "noise"))
    floors = [json.loads((run / "noise_floor.json").read_text()) for run in (off, on)]
    assert floors[0]["seeds"] == floors[1]["seeds"] and floors[0]["sd"] == pytest.approx(floors[1]["sd"], rel=1e-3)
    assert records_of(on, "noise")[0]["trial_id"] != records_of(off, "noise")[0]["trial_id"]

    # lose seed 2's record (a kill before it was appended): the resume trains it, and only it
    lines = (on / "trials.jsonl").read_text().splitlines()
    kept = [x for x in lines if not (json.loads(x)["kind"] == "noise" and json.loads(x)["seed"] == 2)]
    (on / "trials.jsonl").write_text("\n".join(kept) + "\n")
    before = {r["seed"]: r["trial_id"] for r in records_of(on, "noise")}
    tlmsearch.resume(on, progress=False)
    after = {r["seed"]: r["trial_id"] for r in records_of(on, "noise")}
    assert sorted(after) == [1, 2, 3] and len(records_of(on, "noise")) == 3
    assert {s: after[s] for s in before} == before  # the recorded members were not trained again
    assert_same_records(records_of(off, "noise"), records_of(on, "noise"))


def test_compare_pack_on_gives_the_records_of_pack_off(tmp_path: Path) -> None:
    argv = ["compare", "--preset", "tiny", "--families", "uniform", "cosine", "--seeds", "2", *STEPS]
    argv += ["--corpus", "pydoc", "--runs-dir", str(tmp_path), "--quiet"]
    assert main([*argv, "--name", "off"]) == 0
    assert main([*argv, "--name", "on", "--pack", "on"]) == 0
    off, on = records_of(tmp_path / "off", "compare"), records_of(tmp_path / "on", "compare")
    assert len(off) == 4
    assert_same_records(off, on)
    for run, mode in (("off", "off"), ("on", "on")):  # the run's search.yaml says how it trained
        assert SearchConfig.load(tmp_path / run / "search.yaml").pack == mode
