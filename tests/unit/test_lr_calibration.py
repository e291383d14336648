"""The learning-rate calibration: the pure grid and choice (ties, divergence, the edge warning),
the options of search and study, which rates a run still needs and its choice read back from
the records, the command line's --lr rule, and how status and the study summary show it."""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

import pytest
from analysis_fakes import record, write_run

from tlmsearch.configs.lr_calibration import (
    AUTO_FACTORS,
    after_explicit_lr,
    calibration_steps,
    grid,
    parse_setting,
    resolved_setting,
)
from tlmsearch.configs.lr_choice import LrCalibration, choose_rate, short_text
from tlmsearch.configs.search import SearchConfig, load_run_config
from tlmsearch.configs.study import StudyConfig
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.lr import (
    at_search_rate,
    calibration_rates,
    calibration_runs,
    calibration_seeds,
    lr_base_width,
    lr_calibration,
    lr_steps,
    missing_rates,
    rate_of,
    read_lr_calibration,
    write_lr_calibration,
)
from tlmsearch.rundir.records import KINDS, LR_KIND, TrialRecord

NAN = math.nan

# ----------------------------------------------------------------------------- pure


def test_auto_grid_is_five_log_spaced_rates_around_the_configured_one() -> None:
    assert AUTO_FACTORS == (0.25, 0.5, 1.0, 2.0, 4.0)
    assert grid("auto", 2e-3) == pytest.approx((5e-4, 1e-3, 2e-3, 4e-3, 8e-3))
    ratios = [b / a for a, b in zip(grid("auto", 3e-4), grid("auto", 3e-4)[1:], strict=False)]
    assert ratios == pytest.approx([2.0] * 4)  # log-spaced
    assert grid("off", 2e-3) == ()
    assert resolved_setting("auto", 2e-3) == "0.0005,0.001,0.002,0.004,0.008"
    assert resolved_setting("off", 2e-3) == "off"
    assert resolved_setting("4e-3,1e-3,2e-3,8e-3", 5.0) == "0.001,0.002,0.004,0.008"  # a list ignores lr


def test_settings_are_checked_and_written_canonically() -> None:
    assert parse_setting(" AUTO ") == "auto" and parse_setting("Off") == "off"
    assert parse_setting("8e-3, 1e-3,2e-3,4e-3") == "0.001,0.002,0.004,0.008"  # sorted, spaces gone
    for bad in ("", "fast", "1e-3,2e-3,4e-3", "1e-3,1e-3,2e-3,4e-3", "1e-3,2e-3,4e-3,-1", "1e-3,2e-3,4e-3,nan"):
        with pytest.raises(ConfigError, match="lr_calibration"):
            parse_setting(bad)
    with pytest.raises(ConfigError, match="at most"):
        parse_setting(",".join(str(0.001 * (k + 1)) for k in range(17)))


def test_choice_lowest_loss_divergence_worst_ties_to_the_lower_rate() -> None:
    rates = (1e-3, 2e-3, 4e-3, 8e-3)
    assert choose_rate(rates, (3.0, 2.5, 2.6, 2.9)) == 1
    assert choose_rate(rates, (3.0, 2.5, NAN, 2.4)) == 3  # a diverged rate is worst, not best
    assert choose_rate(rates, (3.0, math.inf, 2.7, 2.7)) == 2  # a tie goes to the lower rate
    assert choose_rate(rates, (2.7, 2.7, 2.7, 2.7)) == 0
    assert choose_rate(rates, (NAN, NAN, NAN, NAN)) is None


def _cal(losses: tuple[float, ...], **changes: object) -> LrCalibration:
    """A calibration of one seed per rate (the rule before seeds: the lowest loss, no interval)."""
    trained = changes.pop("trained", (True,) * len(losses))
    reasons = changes.pop("reasons", (None,) * len(losses))
    base = LrCalibration(
        rates=(5e-4, 1e-3, 2e-3, 4e-3, 8e-3), seeds=(5,), losses=tuple((v,) for v in losses),
        trained=tuple((t,) for t in trained), configured=2e-3, steps=100, reasons=tuple((r,) for r in reasons),
    )  # fmt: skip
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_calibration_object_chooses_warns_at_an_edge_and_describes_itself() -> None:
    middle = _cal((3.0, 2.8, 2.7, 2.75, 3.1))
    assert middle.complete and middle.chosen == 2e-3 and middle.rate == 2e-3 and middle.edge is None
    assert middle.warnings() == []
    assert (
        "0.002 (chosen): 2.7000" in middle.describe()
        and "chosen 0.002 (no interval: one seed per rate; configured 0.002)" in middle.describe()
    )

    high = _cal((3.0, 2.9, 2.8, 2.7, 2.6))
    assert high.chosen == 8e-3 and high.edge == "highest"
    (warning,) = high.warnings()
    assert warning.startswith("warning:") and "highest" in warning and "higher rate may be better" in warning
    low = _cal((2.6, 2.7, 2.8, NAN, NAN), reasons=(None, None, None, "TrainingDiverged: training diverged", "x"))
    assert low.chosen == 5e-4 and low.edge == "lowest" and "lower rate" in low.warnings()[0]
    assert "0.004: diverged" in low.describe() and "0.008: failed" in low.describe()

    none = _cal((NAN,) * 5)
    assert none.chosen is None and none.rate == 2e-3  # every rate failed: keep the configured one
    assert "keep the configured rate 0.002" in none.warnings()[0]

    partial = _cal((2.9, NAN, NAN, NAN, NAN), trained=(True, False, False, False, False))
    assert not partial.complete and partial.chosen is None and partial.rate == 2e-3 and partial.warnings() == []
    assert "1 of 5 runs trained so far" in partial.describe() and "pending" in partial.describe()

    d = high.to_dict()
    assert d["chosen"] == 8e-3 and d["edge"] == "highest" and d["losses"][0] == [3.0] and d["warnings"]
    assert d["interval"] is None and d["seeds"] == [5] and d["sds"] == [None] * 5  # one seed: no spread
    assert short_text(d) == "0.008 of 0.0005..0.008, 1 seed, at the highest edge"
    assert short_text(partial.to_dict()) == "calibrating (1 run of 0.0005..0.008)" and short_text(None) == "-"


def test_calibration_steps_are_a_fraction_of_the_trial_length() -> None:
    assert calibration_steps(200, 1.0) == 200 and calibration_steps(200, 0.5) == 100
    assert calibration_steps(3, 0.01) == 1


def test_an_explicit_lr_turns_calibration_off_unless_asked() -> None:
    assert after_explicit_lr("auto", lr_given=True, setting_given=False) == "off"
    assert after_explicit_lr("auto", lr_given=True, setting_given=True) == "auto"
    assert after_explicit_lr("auto", lr_given=False, setting_given=False) == "auto"


# ----------------------------------------------------------------------------- configs


def cfg(**changes: object) -> SearchConfig:
    base = SearchConfig(name="n", preset="tiny", model={"n_layers": 4}, trials=6, seed=5)
    return base.replace(**changes)


def test_search_option_defaults_off_study_option_defaults_auto() -> None:
    assert SearchConfig().lr_calibration == "off" and SearchConfig().lr_calibration_fraction == 1.0
    assert StudyConfig().search.lr_calibration == "auto"
    study = StudyConfig.from_flat(
        dict(archs=("transformer",), trials=6, random_control=True, lr_calibration="1e-3,2e-3,4e-3,8e-3")
    )
    assert study.search_config("transformer").lr_calibration == "0.001,0.002,0.004,0.008"
    assert study.with_fields(lr_calibration_fraction=0.5).search_config("transformer").lr_calibration_fraction == 0.5
    rnd = study.random_config("transformer")
    assert rnd is not None and rnd.lr_calibration == "off"  # the main search's rate serves it
    for bad in ({"lr_calibration": "3"}, {"lr_calibration_fraction": 0.0}, {"lr_calibration_fraction": 1.5}):
        with pytest.raises(ConfigError, match="lr_calibration"):
            cfg(**bad)
    with pytest.raises(ConfigError, match="lr_calibration"):
        StudyConfig.from_flat(dict(lr_calibration="sometimes"))
    assert SearchConfig.from_dict(cfg(lr_calibration="auto").to_dict()) == cfg(lr_calibration="auto")


def test_a_search_yaml_written_before_calibration_reads_as_off(tmp_path: Path) -> None:
    path = tmp_path / "search.yaml"
    cfg(lr_calibration="auto").save(path)
    assert load_run_config(path).lr_calibration == "auto"
    path.write_text("\n".join(line for line in path.read_text().splitlines() if "lr_calibration:" not in line) + "\n")
    assert load_run_config(path).lr_calibration == "off"


def test_resolve_writes_the_grid_out() -> None:
    from tlmsearch.tuning.runner import resolve

    resolved = resolve(cfg(lr_calibration="auto", train=SearchConfig().train.replace(lr=1e-3), data=_pydoc()))
    assert resolved.lr_calibration == "0.00025,0.0005,0.001,0.002,0.004"
    assert resolve(resolved).lr_calibration == resolved.lr_calibration  # idempotent once written out


def _pydoc():  # type: ignore[no-untyped-def]
    from tlmsearch.core.base import DataConfig

    return DataConfig(corpus="pydoc")


# ----------------------------------------------------------------------------- records


def _rec(
    rate: float | None, loss: float, *, status: str = "complete", kind: str = LR_KIND, seed: int = 5
) -> TrialRecord:
    d = record(f"{kind}-{rate}-{seed}-{status}", "uniform", loss, kind=kind, seed=seed, status=status)
    d["params"] = {"lr": rate} if rate is not None else {}
    if status == "failed":
        d["metrics"], d["curve"], d["reason"] = {}, [], "TrainingDiverged: training diverged at step 3: loss = nan"
    return TrialRecord.from_dict(d)


def test_lr_is_a_record_kind() -> None:
    assert LR_KIND == "lr" and LR_KIND in KINDS


def test_missing_rates_and_the_choice_from_records_with_one_seed() -> None:
    c = cfg(lr_calibration="1e-3,2e-3,4e-3,8e-3", lr_calibration_seeds=1, train=SearchConfig().train.replace(steps=40))
    assert calibration_rates(c) == (1e-3, 2e-3, 4e-3, 8e-3) and calibration_runs(c) == 4
    assert missing_rates(c, []) == [(1e-3, 5), (2e-3, 5), (4e-3, 5), (8e-3, 5)]
    recs = [_rec(2e-3, 2.5), _rec(8e-3, NAN, status="failed"), _rec(4e-3, 2.0, kind="noise")]
    assert missing_rates(c, recs) == [(1e-3, 5), (4e-3, 5)]  # a failed rate is recorded: never re-run; noise is not lr
    partial = lr_calibration(c, recs, 2e-3)
    assert partial is not None and not partial.complete and partial.rate == 2e-3
    recs += [_rec(1e-3, 2.6), _rec(4e-3, 2.4)]
    done = lr_calibration(c, recs, 2e-3)
    assert done is not None and done.complete and done.chosen == 4e-3
    assert done.losses[3][0] != done.losses[3][0]  # the diverged rate: nan, the worst
    assert "0.008: diverged" in done.describe()
    assert rate_of(recs[0]) == 2e-3 and math.isnan(rate_of(_rec(None, 2.0)))
    assert lr_calibration(cfg(), recs, 2e-3) is None  # calibration off
    assert missing_rates(cfg(), recs) == []


def _paired(rates: tuple[float, ...], curve: dict[float, float], seeds=(5, 6, 7), shift=(0.0, 0.03, -0.02)):  # type: ignore[no-untyped-def]
    """Records of a calibration: the loss of `rate` at seed k is curve[rate] + shift[k] (paired seeds)."""
    return [_rec(r, curve[r] + d, seed=s) for r in rates for s, d in zip(seeds, shift, strict=True)]


def test_three_paired_seeds_a_rate_and_a_resume_that_trains_only_what_is_missing() -> None:
    c = cfg(lr_calibration="1e-3,2e-3,4e-3,8e-3", train=SearchConfig().train.replace(steps=40))
    assert c.lr_calibration_seeds == 3 and calibration_seeds(c) == (5, 6, 7) and calibration_runs(c) == 12
    assert len(missing_rates(c, [])) == 12
    curve = {1e-3: 2.6, 2e-3: 2.5, 4e-3: 2.45, 8e-3: 2.7}
    recs = _paired((1e-3, 2e-3, 4e-3, 8e-3), curve)
    assert missing_rates(c, recs[:-1]) == [(8e-3, 7)]  # a kill before the last run: only it trains again
    done = lr_calibration(c, recs, 2e-3)
    assert done is not None and done.complete and done.best_index == 2 and done.added == ()
    # the parabola through (1, 2.5), (2, 2.45), (3, 2.7) in x = log2(rate / 1e-3): second difference 0.3,
    # slope at x = 2 is (2.7 - 2.5) / 2 = 0.1, so its vertex is at x = 2 - 0.1 / 0.3 = 5/3: 1e-3 * 2**(5/3) = 0.0031748
    assert done.chosen == 3.17e-3
    assert done.means == pytest.approx((2.6033333, 2.5033333, 2.4533333, 2.7033333))
    assert done.sds == pytest.approx((0.0251661,) * 4, rel=1e-5)  # the seed shifts' sd, the same at every rate
    # the paired differences have no spread here (a seed shifts every rate alike), so every bootstrap
    # resample chooses the same rate: the interval is that rate
    lo, hi = done.interval or (0, 0)
    assert lo == pytest.approx(1e-3 * 2 ** (5 / 3)) and hi == pytest.approx(1e-3 * 2 ** (5 / 3))
    d = done.to_dict()
    assert d["seeds"] == [5, 6, 7] and d["best"] == 4e-3 and d["chosen"] == 3.17e-3
    assert d["paired_vs_best"][0] == {"mean": pytest.approx(0.15), "sd": pytest.approx(0.0, abs=1e-12)}
    assert "4e-3" not in done.describe() and "0.004 (best): 2.4533 +- 0.0252" in done.describe()
    assert "chosen 0.00317 (95% interval 0.00317-0.00317 (bootstrap, 3 seeds, 6 df)" in done.describe()


def test_a_best_mean_at_an_edge_widens_the_grid_until_the_optimum_is_inside() -> None:
    c = cfg(lr_calibration="1e-3,2e-3,4e-3,8e-3", train=SearchConfig().train.replace(steps=40))
    curve = {r: 2.0 + 0.05 * (math.log2(r / 3.2e-2)) ** 2 for r in (1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2, 3.2e-2, 6.4e-2)}
    recs = _paired((1e-3, 2e-3, 4e-3, 8e-3), curve)
    assert missing_rates(c, recs) == [(1.6e-2, 5), (1.6e-2, 6), (1.6e-2, 7)]  # the best mean at 8e-3: one step on
    recs += _paired((1.6e-2,), curve)
    assert missing_rates(c, recs) == [(3.2e-2, 5), (3.2e-2, 6), (3.2e-2, 7)]
    recs += _paired((3.2e-2,), curve)
    assert [r for r, _ in missing_rates(c, recs)] == [6.4e-2] * 3  # 3.2e-2 is best, at the edge: one more
    recs += _paired((6.4e-2,), curve)
    assert missing_rates(c, recs) == []
    done = lr_calibration(c, recs, 2e-3)
    assert done is not None and done.edge is None and done.chosen == 3.2e-2 and done.added == (1.6e-2, 3.2e-2, 6.4e-2)
    assert done.warnings() == [] and "widened by 0.016, 0.032, 0.064" in done.describe()


def test_widening_stops_at_its_limit_and_once_a_later_phase_trained() -> None:
    c = cfg(lr_calibration="1e-3,2e-3,4e-3,8e-3", train=SearchConfig().train.replace(steps=40))
    curve = {1e-3 * 2**k: 3.0 - 0.1 * k for k in range(9)}  # falling all the way: the optimum is far above
    recs = _paired(tuple(curve), curve)
    done = lr_calibration(c, recs, 2e-3)
    assert done is not None and len(done.added) == 4 and done.rates[-1] == 0.128 and missing_rates(c, recs) == []
    assert done.edge == "highest" and done.chosen == 0.128 and "after widening it by 4 rate(s)" in done.warnings()[0]
    base = _paired((1e-3, 2e-3, 4e-3, 8e-3), curve)
    frozen = base + [_rec(None, 2.0, kind="noise")]  # the noise floor trained at 8e-3: the rate stays
    kept = lr_calibration(c, frozen, 2e-3)
    assert kept is not None and kept.added == () and kept.chosen == 8e-3 and missing_rates(c, frozen) == []
    assert "highest" in kept.warnings()[0]
    widened = _paired((1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2), curve) + [_rec(None, 2.0, kind="noise")]
    grown = lr_calibration(c, widened, 2e-3)  # widened once before the noise floor: the grid keeps that rate
    assert grown is not None and grown.added == (1.6e-2,) and grown.chosen == 1.6e-2 and missing_rates(c, widened) == []


def test_a_run_written_with_one_seed_per_rate_reads_as_it_trained(tmp_path: Path) -> None:
    """A search.yaml from before lr_calibration_seeds reads as one seed: complete, the lowest loss, no re-training."""
    c = cfg(lr_calibration="1e-3,2e-3,4e-3,8e-3", train=SearchConfig().train.replace(steps=40, lr=2e-3))
    path = c.save(tmp_path / "search.yaml")
    assert load_run_config(path).lr_calibration_seeds == 3
    path.write_text("\n".join(line for line in path.read_text().splitlines() if "lr_calibration_seeds" not in line))
    old = load_run_config(path)
    assert old.lr_calibration_seeds == 1 and SearchConfig.load(path).lr_calibration_seeds == 3  # a config file: 3
    recs = [_rec(r, loss) for r, loss in ((1e-3, 2.6), (2e-3, 2.5), (4e-3, 2.52), (8e-3, 2.7))]
    recs.append(_rec(None, 2.4, kind="baseline"))
    assert missing_rates(old, recs) == []
    read = lr_calibration(old, recs, 2e-3)
    assert read is not None and read.chosen == 2e-3 and read.interval is None  # no fit, no interval with one seed


def test_lr_steps_and_width() -> None:
    c = cfg(lr_calibration="auto", lr_calibration_fraction=0.5, train=SearchConfig().train.replace(steps=40))
    assert lr_steps(c) == 20
    assert lr_base_width(c) is None
    sweep = cfg(base_widths=(64, 192), budget_levels=3)
    assert lr_base_width(sweep) == 128  # the middle budget, where the baselines run


def test_at_search_rate_takes_the_rate_of_a_searchs_config(tmp_path: Path) -> None:
    c = cfg(lr_calibration="auto")
    assert at_search_rate(c, tmp_path) == c.replace(lr_calibration="off")  # no search.yaml yet
    cfg(train=SearchConfig().train.replace(lr=4e-3)).save(tmp_path / "search.yaml")
    moved = at_search_rate(c, tmp_path)
    assert moved.train.lr == 4e-3 and moved.lr_calibration == "off"


def test_the_calibration_file_round_trips(tmp_path: Path) -> None:
    assert write_lr_calibration(tmp_path, None) is None and read_lr_calibration(tmp_path) is None
    write_lr_calibration(tmp_path, _cal((3.0, 2.8, 2.7, 2.75, 3.1)))
    data = read_lr_calibration(tmp_path)
    assert data is not None and data["chosen"] == 2e-3 and data["rates"][0] == 5e-4
    (tmp_path / "lr_calibration.json").write_text("{not json")
    assert read_lr_calibration(tmp_path) is None  # damaged: the records still hold it


# ----------------------------------------------------------------------------- shown


def _calibrated_run(tmp_path: Path) -> Path:
    """A search run whose calibration (3 paired seeds a rate) chose 0.00449 of 1e-3..8e-3 (train.lr
    updated), and two search trials: the best mean is 4e-3's; the parabola through x = log2(rate / 1e-3)
    = 1, 2, 3 and means 2.5, 2.4, 2.45 (+ the seeds' mean shift) has second difference 0.15 and slope -0.025
    at x = 2, so its vertex is at x = 2 + 0.025 / 0.15 = 13/6: 1e-3 * 2**(13/6) = 0.0044898."""
    shifts = (0.0, 0.03, -0.02)
    recs = [record(f"lr{k}-{j}", "uniform", loss + shifts[j], kind="lr", seed=5 + j, params={"lr": rate})
            for k, (rate, loss) in enumerate(((1e-3, 2.6), (2e-3, 2.5), (4e-3, 2.4), (8e-3, 2.45)))
            for j in range(3)]  # fmt: skip
    recs += [
        record("b-uni", "uniform", 2.4, kind="baseline", seed=5, baseline="uniform"),
        record("s1", "cosine:start=1.5,end=0.5", 2.35, seed=5),
    ]
    run = write_run(tmp_path / "run", recs)
    train = SearchConfig().train.replace(steps=40, lr=4.49e-3)
    c = cfg(noise_seeds=0, lr_calibration="1e-3,2e-3,4e-3,8e-3", train=train)
    c.save(run / "search.yaml")
    return run


def test_status_shows_the_chosen_rate_and_the_grids_losses(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from tlmsearch.cli.status import print_status, status_dict
    from tlmsearch.rundir.study import load

    study = load(_calibrated_run(tmp_path))
    cal = study.lr_calibration()
    assert cal is not None and cal.chosen == 4.49e-3 and cal.configured == 4.49e-3  # no lr_calibration.json: train.lr
    s = status_dict(study)
    assert s["lr"] == 4.49e-3 and s["lr_calibration"]["chosen"] == 4.49e-3 and s["lr_calibration"]["complete"]
    assert s["lr_calibration"]["means"][2] == pytest.approx(2.4 + 0.01 / 3) and s["lr_calibration"]["interval"]
    assert s["ended"] == 2  # calibration trials are not search trials
    assert [r["trial_id"] for r in s["best"]] == ["s1", "b-uni"]
    print_status(study)
    out = capsys.readouterr().out
    assert "learning rate: 0.00449; learning-rate calibration" in out and "0.004 (best): 2.4033 +- 0.0252" in out
    assert "(95% interval 0.00449-0.00449 (bootstrap, 3 seeds, 6 df)" in out

    plain = load(write_run(tmp_path / "plain", [record("s1", "uniform", 2.0, seed=5)]))
    assert status_dict(plain)["lr_calibration"] is None
    assert "(as configured; not calibrated)" in status_dict(plain)["lr_line"]


def test_search_and_study_flags_and_the_explicit_lr_rule() -> None:
    from tlmsearch.cli import search as search_cli
    from tlmsearch.cli import study as study_cli

    def parsed(module, argv: list[str]):  # type: ignore[no-untyped-def]
        p = argparse.ArgumentParser()
        module.add_arguments(p)
        return module.build_config(p.parse_args(argv))

    assert parsed(search_cli, []).lr_calibration == "off"
    assert parsed(search_cli, ["--lr-calibration", "auto"]).lr_calibration == "auto"
    assert (
        parsed(search_cli, ["--lr-calibration", "auto", "--lr-calibration-fraction", "0.5"]).lr_calibration_fraction
        == 0.5
    )
    assert parsed(search_cli, ["--lr-calibration", "1e-3,2e-3,4e-3,8e-3"]).lr_calibration == "0.001,0.002,0.004,0.008"
    assert parsed(study_cli, []).search.lr_calibration == "auto"  # a study calibrates by default
    assert parsed(study_cli, ["--lr", "1e-3"]).search.lr_calibration == "off"  # an explicit rate: no calibration
    assert parsed(study_cli, ["--train", "lr=1e-3"]).search.lr_calibration == "off"
    both = parsed(study_cli, ["--lr", "1e-3", "--lr-calibration", "auto"])
    assert both.search.lr_calibration == "auto" and both.search.train.lr == 1e-3  # asked for: the grid centres on --lr
    with pytest.raises(ConfigError, match="lr_calibration"):
        parsed(search_cli, ["--lr-calibration", "1e-3,2e-3"])
    help_text = argparse.ArgumentParser()
    study_cli.add_arguments(help_text)
    assert "explicit --lr turns it off" in help_text.format_help().replace("\n", " ").replace("  ", " ")


def test_the_study_cost_counts_the_calibration_trials(tmp_path: Path) -> None:
    from study_fakes import tiny_study

    from tlmsearch.studies.cost import phase_trials

    off = tiny_study(tmp_path)
    assert off.search.lr_calibration == "off"  # the shared tiny study opts out, for speed
    on = tiny_study(tmp_path, lr_calibration="auto")
    assert phase_trials(on)["search"][0] == phase_trials(off)["search"][0] + 15  # 5 rates x 3 paired seeds
    one = tiny_study(tmp_path, lr_calibration="auto", lr_calibration_seeds=1)
    assert phase_trials(one)["search"][0] == phase_trials(off)["search"][0] + 5


def test_the_committed_reference_runs_read_as_one_seed_per_rate() -> None:
    """runs/reference was calibrated before the seeds existed: its ladder, its study and their searches
    read as one seed per rate, complete, each with the rate it trained at (the lowest loss), nothing to train."""
    from tlmsearch.ladders.files import load_config as load_ladder
    from tlmsearch.rundir.study import load
    from tlmsearch.studies.files import load_config as load_study

    root = Path(__file__).resolve().parents[2] / "runs" / "reference"
    assert load_ladder(root / "ladder").lr_calibration_seeds == 1
    assert load_study(root / "study20").search.lr_calibration_seeds == 1
    for run, rate in ((root / "ladder" / "cpu-xs-t20", 2e-3), (root / "study20" / "titans", 8e-3)):
        study = load(run)
        cal = study.lr_calibration()
        assert study.config.lr_calibration_seeds == 1 and cal is not None and cal.complete and cal.interval is None
        assert cal.chosen == rate == study.config.train.lr and missing_rates(study.config, study.records) == []


def test_a_study_calibrates_at_its_verifications_length() -> None:
    """Searches that screen at 5 tokens per parameter calibrate at the verification's 20: the
    calibration's steps are the verification's (`deciding_train`, the verify phase's own path);
    a study that gives its steps calibrates at them; plans count each run in search trials."""
    from tlmsearch.configs.resolve import calibration_train, calibration_weight, resolve_trial_length
    from tlmsearch.core.base import deciding_train
    from tlmsearch.costs.phases import lr_runs

    search = StudyConfig().search_config("transformer")
    assert search.train.tokens_per_param == 5.0 and search.lr_calibration_tokens_per_param == 20.0
    resolved = resolve_trial_length(search)
    verify = resolve_trial_length(search.replace(train=deciding_train(search.train, 20.0)))
    assert calibration_train(resolved).steps == verify.train.steps == lr_steps(resolved) == 7851
    assert resolved.train.steps == 1963 and calibration_weight(search) == pytest.approx(7851 / 1963)
    assert lr_runs(search) == round(5 * 3 * 7851 / 1963) == 60  # 5 rates x 3 seeds, each 4 search trials long
    given = StudyConfig.from_flat(dict(train=SearchConfig().train.replace(tokens_per_param=0.0, steps=300)))
    assert given.search_config("transformer").lr_calibration_tokens_per_param == 0.0
    assert lr_steps(given.search_config("transformer")) == 300
    with pytest.raises(ConfigError, match="lr_calibration_tokens_per_param"):
        cfg(lr_calibration_tokens_per_param=-1.0)


def test_the_ladder_report_states_each_points_rate_with_its_interval(tmp_path: Path) -> None:
    from tlmsearch.ladders.config import LadderConfig
    from tlmsearch.ladders.files import point_lr_intervals
    from tlmsearch.ladders.report import _lr_text

    lad = LadderConfig(name="l", runs_dir=str(tmp_path), points=("tiny@5", "tiny:n_layers=3@5"))
    (tmp_path / "l").mkdir()
    lad.save(tmp_path / "l" / "ladder.yaml")
    first, second = (s.name for s in lad.specs)
    shifts = (0.0, 0.03, -0.02)
    cal = LrCalibration(
        rates=(1e-3, 2e-3, 4e-3, 8e-3), seeds=(0, 1, 2), configured=2e-3, steps=10,
        losses=tuple(tuple(v + d for d in shifts) for v in (2.6, 2.5, 2.4, 2.45)), trained=((True,) * 3,) * 4,
        reasons=((None,) * 3,) * 4,
    )  # fmt: skip
    (tmp_path / "l" / first).mkdir()
    write_lr_calibration(tmp_path / "l" / first, cal)
    (tmp_path / "l" / second).mkdir()
    write_lr_calibration(tmp_path / "l" / second, _cal((3.0, 2.8, 2.7, 2.75, 3.1)))  # one seed: no interval
    got = point_lr_intervals(tmp_path / "l")
    assert got == {first: [pytest.approx(4.49e-3, rel=1e-3), pytest.approx(4.49e-3, rel=1e-3)]}
    assert _lr_text({"lr": 4.49e-3, "lr_interval": [0.0041, 0.0052]}) == "0.00449 [0.0041, 0.0052]"
    assert _lr_text({"lr": 2e-3}) == "0.002" and _lr_text({"lr": None}) == "-"


def test_the_calibration_announces_its_runs_in_words_that_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The line before a batch of calibration runs: "1 rate ... (1 run)" when the grid widens by
    one rate, "5 rates ... (15 runs)" at the start (nothing trains here: the batch is a fake)."""
    from tlmsearch.tuning import runner

    cfg = SearchConfig(preset="tiny", name="cal", trials=1)
    batches = [[(r, s) for r in (0.0005, 0.001, 0.002, 0.004, 0.008) for s in (0, 1, 2)], [(0.016, 0)]]
    monkeypatch.setattr(runner, "missing_rates", lambda cfg, records: batches.pop(0) if batches else [])
    grows = iter(range(100))
    monkeypatch.setattr(runner, "read_records", lambda run_dir: [None] * next(grows))  # one more each read
    monkeypatch.setattr(runner, "fit_fixed", lambda *a, **k: None)
    monkeypatch.setattr(runner, "lr_calibration", lambda *a, **k: None)
    monkeypatch.setattr(runner, "lr_base_width", lambda cfg: None)
    assert runner.run_lr_trials(cfg, tmp_path, str(tmp_path), progress=True) == cfg
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith("learning-rate calibration: uniform at 5 rates (0.0005, 0.001, 0.002, 0.004, 0.008) ")
    assert first.endswith("x seeds 0, 1, 2 (15 runs) for " + f"{runner.lr_train(cfg).steps} steps, before the search")
    assert second.startswith("learning-rate calibration: uniform at 1 rate (0.016) x seed 0 (1 run) for ")
