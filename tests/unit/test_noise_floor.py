"""The search's noise floor: the pure floor/tie maths, which seeds a search trains as noise
trials, the floor read back from records, and how status / summary / best() show it."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest
from analysis_fakes import record, write_run

from tlmsearch import plots
from tlmsearch.analysis.summary import summarize
from tlmsearch.configs.search import SearchConfig
from tlmsearch.errors import ConfigError
from tlmsearch.noise_floor import (
    TIE_SDS,
    NoiseFloor,
    describe_gap,
    floor_sd,
    floor_text,
    in_sd,
    is_tie,
    ranking_gaps,
    screen_text,
    screen_ties,
    tie_gap,
)
from tlmsearch.rundir.noise import (
    floor_records,
    missing_noise_seeds,
    noise_floor,
    noise_trial_seeds,
    search_runs_uniform,
)
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.rundir.study import load

# ----------------------------------------------------------------------------- pure maths


def test_floor_sd_is_the_sample_sd_and_nan_below_two_values() -> None:
    assert floor_sd([1.0, 1.2, 1.4]) == pytest.approx(0.2)
    assert floor_sd([1.0, 1.2, math.nan, 1.4]) == pytest.approx(0.2)  # a non-finite value is left out
    assert math.isnan(floor_sd([1.0])) and math.isnan(floor_sd([]))


def test_tie_rule_is_two_sds_of_the_difference_of_two_single_seed_scores() -> None:
    sd = 0.015
    assert TIE_SDS == 2.0
    assert tie_gap(sd) == pytest.approx(2 * math.sqrt(2) * 0.015)  # 0.0424
    assert is_tie(0.018, sd) is True and is_tie(-0.018, sd) is True  # the reference run's top-2 gap
    assert is_tie(0.043, sd) is False
    assert is_tie(0.01, 0.0) is None and is_tie(0.01, math.nan) is None  # no usable floor: unknown
    assert in_sd(0.012, 0.015) == pytest.approx(0.8)
    assert math.isnan(in_sd(0.012, 0.0))


def test_describe_gap_says_the_gap_in_floor_units() -> None:
    assert describe_gap(0.012, 0.015) == "+0.0120 nats = 0.8 sd"
    assert describe_gap(-0.03, 0.015) == "-0.0300 nats = -2.0 sd"
    assert describe_gap(0.012, math.nan) == "+0.0120 nats"


def test_ranking_gaps_against_the_best() -> None:
    rows = ranking_gaps([1.80, 1.81, 1.90], 0.01)
    assert [round(r["gap"], 6) for r in rows] == [0.0, 0.01, 0.1]
    assert [r["tie"] for r in rows] == [True, True, False]  # tie threshold 0.0283
    assert rows[1]["gap_sd"] == pytest.approx(1.0)
    assert ranking_gaps([], 0.01) == []
    assert [r["tie"] for r in ranking_gaps([1.8, 1.9], math.nan)] == [None, None]


def test_noise_floor_object() -> None:
    f = NoiseFloor(seeds=(0, 1, 2), values=(1.80, 1.82, 1.84), planned=3, steps=300)
    assert f.usable and f.complete and f.n == 3
    assert f.sd == pytest.approx(0.02) and f.mean == pytest.approx(1.82)
    assert f.tie_gap == pytest.approx(2 * math.sqrt(2) * 0.02)
    d = f.to_dict()
    assert d["sd"] == pytest.approx(0.02) and d["seeds"] == [0, 1, 2] and d["complete"] and "sqrt(2)" in d["tie_rule"]
    assert "sd 0.0200 nats" in f.describe() and "seeds 0, 1, 2" in f.describe()
    partial = NoiseFloor(seeds=(1,), values=(1.8,), planned=3, steps=300)
    assert not partial.usable and not partial.complete and partial.to_dict()["sd"] is None
    assert "1 of 3 seeds" in partial.describe()
    flat = NoiseFloor(seeds=(0, 1), values=(1.8, 1.8), planned=2, steps=300)
    assert not flat.usable  # a zero spread puts nothing in its units


# ----------------------------------------------------------------------------- which seeds


def cfg(**changes: object) -> SearchConfig:
    base = SearchConfig(name="n", preset="tiny", model={"n_layers": 4}, trials=6, seed=5)
    return base.replace(**changes)


def test_noise_seeds_option_is_checked() -> None:
    assert SearchConfig().noise_seeds == 3
    for bad in (1, -1, 101):
        with pytest.raises(ConfigError, match="noise_seeds"):
            cfg(noise_seeds=bad)
    assert cfg(noise_seeds=0).noise_seeds == 0


def test_the_searchs_own_uniform_baseline_is_the_first_seed() -> None:
    c = cfg(noise_seeds=3)
    assert search_runs_uniform(c)
    assert noise_trial_seeds(c) == [6, 7]  # seed 5 is the search's uniform baseline
    assert noise_trial_seeds(cfg(noise_seeds=0)) == []
    # no uniform among the baselines, or not within the trials: every floor seed is a noise trial
    assert noise_trial_seeds(cfg(baselines=("cosine:start=1.5,end=0.5",))) == [5, 6, 7]
    assert noise_trial_seeds(cfg(trials=1, baselines=("cosine:start=1.5,end=0.5", "uniform"))) == [5, 6, 7]


def _rec(kind: str, seed: int, loss: float, spec: str = "uniform", status: str = "complete") -> TrialRecord:
    d = record(f"{kind}-{spec}-{seed}", spec, loss, kind=kind, seed=seed, status=status)
    d["max_steps"] = d["steps"] if status == "complete" else d["max_steps"]
    return TrialRecord.from_dict(d)


def test_missing_seeds_and_floor_from_records() -> None:
    c = cfg(noise_seeds=3)
    assert missing_noise_seeds(c, []) == [6, 7]
    failed = _rec("noise", 7, 1.9, status="failed")
    recs = [_rec("noise", 6, 1.82), failed]
    assert missing_noise_seeds(c, recs) == []  # a recorded noise trial, whatever its status, is not re-run
    floor = noise_floor(c, recs)
    assert floor is not None and floor.seeds == (6,) and not floor.usable
    recs += [
        _rec("baseline", 5, 1.80),  # the search's uniform baseline: the floor's first seed
        _rec("baseline", 5, 1.70, spec="cosine:start=1.5,end=0.5"),  # not uniform: not in the floor
        _rec("verify", 6, 1.5),  # a verify record of uniform: not in the floor
        _rec("noise", 7, 1.84),
    ]
    floor = noise_floor(c, recs)
    assert floor is not None and floor.seeds == (5, 6, 7)
    assert floor.values == pytest.approx((1.80, 1.82, 1.84)) and floor.sd == pytest.approx(0.02)
    assert [r.kind for r in floor_records(c, recs)] == ["baseline", "noise", "noise"]
    assert noise_floor(cfg(noise_seeds=0), recs) is None


# ----------------------------------------------------------------------------- shown


def _noisy_run(tmp_path: Path) -> Path:
    """A search run directory with a floor of sd 0.02 (seeds 5, 6, 7) and three sampled trials."""
    recs = [
        record("b-uni", "uniform", 1.80, kind="baseline", seed=5, baseline="uniform"),
        record("n6", "uniform", 1.82, kind="noise", seed=6),
        record("n7", "uniform", 1.84, kind="noise", seed=7),
        record("s1", "linear:start=1.5,end=0.5", 1.70, seed=5),
        record("s2", "cosine:start=1.5,end=0.5", 1.72, seed=5),
        record("s3", "cosine:start=0.5,end=1.5", 1.90, seed=5),
    ]
    run = write_run(tmp_path / "run", recs)
    c = cfg(noise_seeds=3, train=SearchConfig().train.replace(steps=40))
    c.save(run / "search.yaml")
    return run


def test_best_status_and_summary_show_gaps_in_floor_units(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from tlmsearch.cli.status import print_status, status_dict
    from tlmsearch.rundir.study import load

    run = _noisy_run(tmp_path)
    study = load(run)
    floor = study.noise_floor()
    assert floor is not None and floor.sd == pytest.approx(0.02) and floor.seeds == (5, 6, 7)
    best = study.best(3)
    assert list(best["trial_id"]) == ["s1", "s2", "b-uni"]  # noise trials are not search trials
    assert list(best["tie"]) == [True, True, False]  # 0.02 < 0.0566 <= 0.10
    assert best["gap_sd"].iloc[1] == pytest.approx(1.0)

    s = status_dict(study, top=3)
    assert s["noise_floor"]["sd"] == pytest.approx(0.02) and s["noise"] == 2 and s["ended"] == 4
    assert [b["tie"] for b in s["best"]] == [True, True, False]
    print_status(study, top=3)
    out = capsys.readouterr().out
    assert "noise floor: sd 0.0200 nats over 3 seeds of uniform (seeds 5, 6, 7)" in out
    assert "+0.0200 nats = 1.0 sd (tie)" in out and "+0.1000 nats = 5.0 sd  " in out

    summary = summarize(study.records, study.config.to_dict(), noise_floor=floor)
    assert summary["noise_floor"]["sd"] == pytest.approx(0.02)
    assert [b["tie"] for b in summary["best"][:3]] == [True, True, False]
    no_floor = summarize(study.records, study.config.to_dict())
    assert no_floor["noise_floor"] is None and no_floor["best"][1]["tie"] is None


def test_report_writes_the_floor_to_summary_json_and_md(tmp_path: Path) -> None:
    import json

    from tlmsearch.report.run import write_report

    run = _noisy_run(tmp_path)
    paths = write_report(run)
    s = json.loads(paths["json"].read_text())
    assert s["noise_floor"]["sd"] == pytest.approx(0.02) and s["best"][1]["tie"] is True
    md = paths["markdown"].read_text()
    status = next(line for line in md.splitlines() if line.startswith("Noise floor: sd 0.0200 nats over 3 seeds"))
    assert floor_text(s["noise_floor"]) in status[0].lower() + status[1:]  # the words of `tlmsearch status`
    assert "| +0.0200 nats = 1.0 sd (tie) |" in md  # as status shows the row
    fig = plots.plot_ranking(load(run).records, floor=s["noise_floor"])  # the report's ranking figure
    (band,) = fig.layout.shapes
    assert band.y1 - band.y0 == pytest.approx(s["noise_floor"]["tie_gap"])  # ties inside, the others outside
    assert statistics.stdev([1.80, 1.82, 1.84]) == pytest.approx(0.02)


def test_a_screen_whose_trials_all_tie_separates_nothing() -> None:
    # floor sd 0.01: tie gap 2 x sqrt(2) x 0.01 = 0.028284...
    ties = screen_ties([3.10, 3.12, 3.11, 3.125], 0.01)
    assert ties == {"trials": 4, "spread": pytest.approx(0.025), "tie_gap": pytest.approx(0.0282843, abs=1e-7)}
    assert screen_text(ties).startswith("screen: all 4 full-fidelity trials lie within 0.0250 nats of each other")
    assert "tie gap (0.0283)" in screen_text(ties) and "--tokens-per-param" in screen_text(ties)
    assert screen_ties([3.10, 3.12, 3.11, 3.129], 0.01) is None  # the worst stands 0.029 apart: it ranks that one
    assert screen_ties([3.10, 3.10], 0.01) is None  # two scores are too few to call a screen empty
    assert screen_ties([3.10, 3.10, math.nan, 3.10], 0.01)["trials"] == 3  # a failed score is not a trial
    assert screen_ties([3.10, 3.11, 3.12], math.nan) is None  # no usable floor: no claim
    assert screen_ties([3.12, 3.10, 3.11], 0.01)["spread"] == pytest.approx(0.02)  # any order


def test_status_says_when_the_screen_separates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from tlmsearch.cli.status import print_status, status_dict

    ranked = _noisy_run(tmp_path / "a")  # floor sd 0.02; search scores 1.70, 1.72, 1.80 (uniform), 1.90
    assert status_dict(load(ranked))["screen_ties"] is None  # 1.90 is 0.20 from the best: ranked apart
    print_status(load(ranked))
    assert "screen:" not in capsys.readouterr().out

    recs = [  # uniform 1.73, 1.75, 1.77 over seeds 5-7: sd 0.02, tie gap 0.0566; the screen spans 0.05
        record("b-uni", "uniform", 1.73, kind="baseline", seed=5, baseline="uniform"),
        record("n6", "uniform", 1.75, kind="noise", seed=6),
        record("n7", "uniform", 1.77, kind="noise", seed=7),
        record("s1", "linear:start=1.5,end=0.5", 1.70, seed=5),
        record("s2", "cosine:start=1.5,end=0.5", 1.75, seed=5),
    ]
    run = write_run(tmp_path / "b", recs)
    cfg(noise_seeds=3, train=SearchConfig().train.replace(steps=40)).save(run / "search.yaml")
    s = status_dict(load(run))
    assert s["screen_ties"] == {"trials": 3, "spread": pytest.approx(0.05), "tie_gap": pytest.approx(0.0565685)}
    print_status(load(run))
    out = capsys.readouterr().out
    assert "  screen: all 3 full-fidelity trials lie within 0.0500 nats of each other" in out
    assert out.index("screen: all 3") > out.index("best (full fidelity):")
