"""Where a running study stands, read from its files, and the live line that shows it (a fake
clock, a fake stream; the study's records are synthetic)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from analysis_fakes import record, write_run

from tlmsearch.configs.study import StudyConfig
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.studies.cost import COST_FILE
from tlmsearch.studies.files import STUDY_CONFIG, STUDY_STATE, load_config
from tlmsearch.studies.progress import LiveView, current_line, snapshot, study_line


def _study(tmp_path: Path, phases: dict[str, str]) -> Path:
    cfg = StudyConfig.from_flat(dict(
        name="st", runs_dir=str(tmp_path), archs=("transformer", "gated_attention"), preset="tiny",
        model={"n_layers": 4}, trials=4, top_k=1, seeds=2, transfer_seeds=2, scheduler="none",
        controls=("groups:third=early",), max_seeds=5, lr_calibration="off", rate_check=0,
        train=TrainConfig(steps=40, eval_interval=10, warmup_steps=2, batch_size=4, eval_windows=4),
        data=DataConfig(corpus="pydoc"),
    ))  # fmt: skip
    study = tmp_path / "st"
    study.mkdir()
    cfg.save(study / STUDY_CONFIG)
    _phases(study, phases)
    return study


def _phases(study: Path, phases: dict[str, str]) -> None:
    state = {k: {"status": v} | ({"outcome": "near_optimal"} if k.endswith("verify") and v == "done" else {})
             for k, v in phases.items()}  # fmt: skip
    (study / STUDY_STATE).write_text(json.dumps({"phases": state}))


def _searched(study: Path, arch: str, n: int, verified: int = 0) -> None:
    recs = [record(f"{arch}{i}", "uniform" if i % 2 else "cosine:start=1.5,end=0.5", 2.3 - 0.01 * i,
                   kind="baseline") for i in range(n)]  # fmt: skip
    recs += [record(f"{arch}v{i}", "linear:start=1.5,end=0.5", 2.2 + 0.01 * i, kind="verify", seed=i + 1)
             for i in range(verified)]  # fmt: skip
    write_run(study / arch, recs, arch)


def test_each_architecture_shows_its_phase_trials_and_best(tmp_path: Path) -> None:
    study = _study(tmp_path, {"transformer/search": "done", "transformer/verify": "running",
                              "gated_attention/search": "running"})  # fmt: skip
    _searched(study, "transformer", 4, verified=2)
    _searched(study, "gated_attention", 1)
    cfg, rows = snapshot(study)
    by = {r.arch: r for r in rows}
    # verify: (top-1, cosine, uniform, the early group) x 2 seeds = 8; the search: 1 of 4
    assert (by["transformer"].phase, by["transformer"].ended, by["transformer"].total) == ("verify", 2, (8, 8))
    assert by["transformer"].best == "linear:start=1.5,end=0.5 2.2050 (2 seeds)"  # best mean of the verified
    assert (by["gated_attention"].phase, by["gated_attention"].ended) == ("search", 1)
    assert by["gated_attention"].best.startswith("cosine:start=1.5,end=0.5 2.3000")  # best single trial
    # what is left: transformer 6 verify + up to 4 transfer; gated 5 search (3 trials and the
    # noise floor's 2 extra seeds) + 8 verify + up to 4
    assert by["transformer"].left == (6, 10) and by["gated_attention"].left == (13, 17)
    line = study_line(cfg.name, rows, (90.0, 150.0), elapsed=65)
    assert line.startswith("study st 1m05s | transformer verify 2/8 best linear")
    assert "| gated_attention search 1/6 best cosine" in line and line.endswith("| left 1.5 min-2.5 min")


def test_a_planned_verification_counts_its_seeds_and_its_rate_check(tmp_path: Path) -> None:
    """Once the pilot fixes the seeds, the verification's total is exact (profiles x seeds, plus
    the learning-rate check's runs), its rate-check runs count as ended, and the line says when
    the verification is decided and the rate check runs (a range before: `phase_trials`)."""
    study = _study(tmp_path, {"transformer/search": "done", "transformer/verify": "running"})
    load_config(study).with_fields(seeds=0, rate_check=3).save(study / STUDY_CONFIG)  # planned seeds
    profiles = ("uniform", "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5")
    recs = [record(f"v{p}{s}", p, 2.2, kind="verify", seed=s) for p in profiles for s in range(1, 6)]
    recs += [record(f"r{i}", "uniform", 2.2, kind="ratecheck", seed=4) for i in range(5)]
    write_run(study / "transformer", recs)
    before = {r.arch: r for r in snapshot(study)[1]}["transformer"]
    assert before.ended == 20 and before.total[0] < before.total[1]  # no plan yet: a range
    plan = {"n_seeds": 5, "pilot_seeds": 3, "final_seeds": 2}
    (study / "transformer" / "verify.json").write_text(json.dumps({"plan": plan, "complete": False}))
    row = {r.arch: r for r in snapshot(study)[1]}["transformer"]
    # 3 profiles x 5 seeds, then cosine and linear at half and twice the rate on 3 seeds (12) and
    # at the base rate on the 1 seed the 2 fresh ones lack (2)
    assert (row.ended, row.total) == (20, (29, 29)) and "rate check" not in row.best
    (study / "transformer" / "verify.json").write_text(json.dumps({"plan": plan, "complete": True}))
    row = {r.arch: r for r in snapshot(study)[1]}["transformer"]
    assert row.text().startswith("transformer verify 20/29 best ") and row.best.endswith("; learning-rate check")
    sequential = {"plan": {**plan, "sequential": {"looks": 3}}}
    (study / "transformer" / "verify.json").write_text(json.dumps(sequential))
    assert {r.arch: r for r in snapshot(study)[1]}["transformer"].total == before.total  # may stop early: a range


def test_waiting_done_and_the_time_left_from_the_calibration(tmp_path: Path) -> None:
    study = _study(tmp_path, {"transformer/search": "done", "transformer/verify": "done",
                              "gated_attention/search": "done", "gated_attention/verify": "done",
                              "transfer/transformer": "done"})  # fmt: skip
    _searched(study, "transformer", 4, verified=8)
    _searched(study, "gated_attention", 4, verified=8)
    _, rows = snapshot(study)
    assert rows[0].text() == "transformer done near_optimal"
    assert rows[1].text() == "gated_attention transfer (waiting) 0/0-4 best near_optimal"
    # measured trials (1 s each in the fakes): at most 4 left, 1 s each over the slots
    line = current_line(study)
    assert line.startswith("study st | transformer done near_optimal | gated_attention transfer (waiting)")
    assert "| left 0.0 min-" in line
    (study / COST_FILE).write_text(json.dumps({"calibration": {"transformer": {"step_s": 0.5}}}))
    assert "left" in current_line(study)  # measured seconds win over the calibration once trials ended


def test_live_view_prints_a_plain_line_each_minute_and_at_each_phase_change(tmp_path: Path) -> None:
    study = _study(tmp_path, {"transformer/search": "running"})
    _searched(study, "transformer", 1)
    now = [100.0]
    out = io.StringIO()
    view = LiveView(study, stream=out, clock=lambda: now[0], tty=False)
    assert view.tick()  # the first line at once
    for t in (110.0, 130.0, 159.0):
        now[0] = t
        assert not view.tick()  # nothing new within the minute
    now[0] = 160.5
    assert view.tick()  # a minute since the last line
    now[0] = 161.0
    _phases(study, {"transformer/search": "done", "transformer/verify": "running"})
    assert view.tick()  # a phase changed: at once
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in out.getvalue()
    assert lines[0].startswith("study st 0m00s | transformer search 1/6") and lines[1].startswith("study st 1m00s")
    assert "transformer verify 0/8" in lines[2]
    view.close()
    assert len(out.getvalue().splitlines()) == 4  # the last line when the study ends


def test_live_view_on_a_terminal_rewrites_one_line(tmp_path: Path) -> None:
    study = _study(tmp_path, {"transformer/search": "running"})
    now = [0.0]
    out = io.StringIO()
    view = LiveView(study, stream=out, clock=lambda: now[0], tty=True)
    assert view.tick()
    now[0] = 1.0
    assert not view.tick()
    now[0] = 2.0
    assert view.tick()
    view.close()
    text = out.getvalue()
    assert text.count("\r\033[K") == 3 and text.endswith("\n") and text.count("\n") == 1


@pytest.mark.parametrize("tty", [False, True])
def test_a_phase_note_prints_lines_of_its_own_and_the_live_line_comes_back(tmp_path: Path, tty: bool) -> None:
    study = _study(tmp_path, {"transformer/search": "running"})
    now = [0.0]
    out = io.StringIO()
    view = LiveView(study, stream=out, clock=lambda: now[0], tty=tty)
    assert view.tick()
    view.note("transformer: verify plan: 8 seeds per profile ...\nverify: next 9 profiles x 5 fresh seeds")
    now[0] = 0.5  # before the line is due again: a note makes it due
    assert view.tick()
    text = out.getvalue()
    notes = "transformer: verify plan: 8 seeds per profile ...\nverify: next 9 profiles x 5 fresh seeds\n"
    assert (("\r\033[K" + notes) if tty else notes) in text
    assert text.rstrip("\n").split("\n")[-1].split("\r\033[K")[-1].startswith("study st")  # the line again


def test_the_study_hands_verify_an_announce_that_notes_the_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tlmsearch.tuning.verify as verify_module
    from tlmsearch.studies.files import load_config
    from tlmsearch.tuning.study import _verify

    study = _study(tmp_path, {"transformer/search": "done"})
    _searched(study, "transformer", 4)
    seen: list[str] = []

    def fake_verify(sub: Path, **kwargs: object) -> object:
        assert kwargs["controls"] == load_config(study).controls  # verified as the study says
        announce = kwargs["announce"]
        assert callable(announce)
        announce("verify plan: 8 seeds per profile")
        return type("R", (), {"verdicts": []})()

    monkeypatch.setattr(verify_module, "verify", fake_verify)
    assert _verify(study / "transformer", None, announce=seen.append) is None
    assert seen == ["verify plan: 8 seeds per profile"]


def test_status_prints_the_same_line_from_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tlmsearch.cli import main

    study = _study(tmp_path, {"transformer/search": "done", "transformer/verify": "running"})
    _searched(study, "transformer", 4, verified=3)
    assert main(["status", str(study)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == current_line(study) and first.startswith("study st | transformer verify 3/8 best linear")
    assert main(["status", str(study), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["now"] == first and data["now_archs"][0]["ended"] == 3


@pytest.mark.parametrize("text", ["{", "[]", '{"phases": 3}'])
def test_a_damaged_state_file_says_how_to_rebuild_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    from tlmsearch.cli import main
    from tlmsearch.studies.cost import read_calibration

    study = _study(tmp_path, {"transformer/search": "done"})
    _searched(study, "transformer", 4)
    (study / STUDY_STATE).write_text(text)
    assert main(["status", str(study)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{study / STUDY_STATE} is damaged" in err[0], err
    assert f"delete it and run `tlmsearch resume {study}`" in err[0]
    (study / STUDY_STATE).unlink()  # as the message says: the phases read as pending again
    assert main(["status", str(study)]) == 0 and "transformer search (waiting) 4/6" in capsys.readouterr().out
    (study / COST_FILE).write_text(text)  # the calibration is a cache: damaged, it is measured again
    assert read_calibration(study) == {}


def test_the_noise_floor_trials_count_as_ended_search_trials(tmp_path: Path) -> None:
    # the search phase's total counts the floor's extra seeds, so its ended count must too
    study = _study(tmp_path, {"transformer/search": "running", "gated_attention/search": "pending"})
    write_run(study / "transformer", [record(f"n{i}", "uniform", 2.3, kind="noise", seed=i + 1) for i in range(2)])
    _, rows = snapshot(study)
    by = {r.arch: r for r in rows}
    assert (by["transformer"].phase, by["transformer"].ended, by["transformer"].total) == ("search", 2, (6, 6))


def test_the_live_line_shows_profiles_briefly_but_keeps_them_apart() -> None:
    from tlmsearch.analysis.collect import brief_label, profile_label

    knots = {"family": "knots", "params": {"k0": 0.7826507194351919, "k1": 1.1061661495857118, "mode": "free"}}
    assert brief_label(knots) == "knots:k0=0.783,k1=1.11,mode=free"
    assert brief_label({"family": "uniform", "params": {}}) == "uniform"
    assert len(profile_label(knots)) > len(brief_label(knots))
