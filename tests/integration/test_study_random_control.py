"""`tlmsearch study --random-control`: per architecture a random-search companion with the same
trials and seed, whose best profile the verification re-trains as "random-best"; and the
study's default learning-rate calibration: each architecture's search calibrates, its
verification and its companion train at the chosen rate, and status and the summary say so
(one study for both: real tiny models on the shared local Ray; slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tlmsearch.configs.search import load_run_config
from tlmsearch.configs.study import StudyConfig
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.rundir.records import read_records

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("ray_session")]


def test_a_study_calibrates_and_verifies_its_random_control_as_random_best(tmp_path: Path) -> None:
    from tlmsearch import study
    from tlmsearch.analysis.collect import label
    from tlmsearch.cli import main
    from tlmsearch.cli.study import study_progress
    from tlmsearch.studies.report import study_summary

    cfg = StudyConfig.from_flat(dict(
        name="rc", runs_dir=str(tmp_path), archs=("transformer",), preset="tiny", model={"n_layers": 4},
        trials=6, top_k=1, seeds=2, controls=(), scheduler="none", noise_seeds=0, random_control=True,
        lr_calibration_seeds=2,
        train=TrainConfig(steps=10, eval_interval=5, warmup_steps=2, batch_size=4, eval_windows=4),
        data=DataConfig(corpus="pydoc"),
    ))  # fmt: skip
    run = study(cfg, progress=False).run_dir
    main_recs, rnd = read_records(run / "transformer"), read_records(run / "random-transformer")
    # the companion: 2 random profiles (6 trials minus the 4 baselines it shares), same seed and steps
    assert [r.kind for r in rnd] == ["sampled", "sampled"] and {r.seed for r in rnd} == {0}
    assert all(r.max_steps == 10 for r in rnd)
    # the study calibrates by default: the companion trains at the rate its main search chose (shared baselines)
    assert cfg.search.lr_calibration == "auto"  # the study's default
    rate = load_run_config(run / "transformer" / "search.yaml").train.lr
    rates = json.loads((run / "transformer" / "lr_calibration.json").read_text())["rates"]
    assert len(rates) >= 5 and sum(r.kind == "lr" for r in main_recs) == 2 * len(rates)  # 2 paired seeds a rate
    assert all(r.train["lr"] == rate for r in rnd)
    verify = [r for r in main_recs if r.kind == "verify"]
    assert verify and all(r.train["lr"] == pytest.approx(rate) for r in verify)  # re-trained at the chosen rate
    entry = study_summary(run)["learning_rates"]["transformer"]
    assert entry["lr"] == pytest.approx(rate) and entry["calibration"]["chosen"] == pytest.approx(rate)
    assert "(best)" in " ".join(entry["losses"]) and entry["calibration"]["interval"] is not None
    md = (run / "summary.md").read_text()
    assert "Learning rate of each architecture" in md and "transformer " in md and "calibrated" in md
    row = study_progress(run, cfg, {})[0]
    assert row["lr"] is not None and row["lr"]["lr"] == pytest.approx(rate)
    s = json.loads((run / "summary.json").read_text())
    c = s["random_control"]["transformer"]
    pool = {r.trial_id: r for r in rnd} | {r.trial_id: r for r in main_recs if r.kind == "baseline"}
    best = min(pool.values(), key=lambda r: r.metric("val_loss"))
    assert c["label"] == label(best) and c["search_val_loss"] == pytest.approx(best.metric("val_loss"))
    verified = [r for r in main_recs if r.kind == "verify" and label(r) == c["label"]]
    assert sorted(r.seed for r in verified) == [1, 2]  # re-trained with the verification's seeds
    if any(r.baseline == "random-best" for r in main_recs):  # a new profile: recorded under its name
        assert all(r.baseline == "random-best" for r in verified)
    assert c["verified"] is not None and c["verified"]["label"] == c["label"]
    assert "Random-search control" in (run / "summary.md").read_text()
    state = json.loads((run / "study_state.json").read_text())["phases"]
    assert state["transformer/random"]["status"] == "done" and state["transformer/random"]["best"] == c["label"]

    before = {p.name: (p / "trials.jsonl").read_text() for p in run.iterdir() if (p / "trials.jsonl").is_file()}
    assert main(["resume", str(run), "--quiet"]) == 0  # nothing left to train
    after = {p.name: (p / "trials.jsonl").read_text() for p in run.iterdir() if (p / "trials.jsonl").is_file()}
    assert after == before
