"""The same limits for the same concept in every command (issue 31), each derived from one
definition: how many ranked trials (status --top, verify --top-k, Study.best: validate.check_top),
how many seeds (verify, plan, study: validate.check_seed_count), which interval methods (a study
offers only t, so --help does not offer what is always refused). Nothing here trains."""

from __future__ import annotations

from pathlib import Path

import pytest
from analysis_fakes import search_records, write_run

from tlmsearch.analysis.stats import METHODS
from tlmsearch.cli import main
from tlmsearch.cli._options import INTERVALS
from tlmsearch.configs.verify import MAX_TOP_K, VerifyOptions
from tlmsearch.core.validate import MAX_SEEDS, MAX_TOP, MIN_SEEDS
from tlmsearch.errors import UserError
from tlmsearch.rundir import load


def refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 1
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def run(tmp_path: Path) -> str:
    return str(write_run(tmp_path / "run", search_records()))


@pytest.mark.parametrize("top", ["-1", "0", str(MAX_TOP + 1)])
def test_status_top_takes_the_bound_of_every_ranked_count(
    run: str, capsys: pytest.CaptureFixture[str], top: str
) -> None:
    line = refused(capsys, ["status", run, "--top", top])
    assert f"--top={top} must be a positive integer, at most {MAX_TOP}" in line
    with pytest.raises(UserError, match=f"at most {MAX_TOP}"):
        load(run).best(int(top))
    with pytest.raises(UserError, match=f"at most {MAX_TOP}"):
        VerifyOptions.of(flags=True, seeds=3, top_k=int(top))


def test_status_top_one_shows_one(run: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", run, "--top", "1", "--json"]) == 0
    assert '"best"' in capsys.readouterr().out
    assert MAX_TOP_K == MAX_TOP


@pytest.mark.parametrize("seeds", [MIN_SEEDS - 1, MAX_SEEDS + 1])
def test_plan_and_study_take_verifys_seed_limits(run: str, capsys: pytest.CaptureFixture[str], seeds: int) -> None:
    allowed = f"an integer from {MIN_SEEDS} to {MAX_SEEDS}"
    assert allowed in refused(capsys, ["verify", run, "--seeds", str(seeds)])
    assert allowed in refused(capsys, ["plan", "--seeds", str(seeds)])
    assert allowed in refused(capsys, ["study", "--seeds", str(seeds), "--dry-run"])


def test_study_does_not_offer_the_interval_it_always_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    assert INTERVALS == METHODS  # the flag's spelling of analysis.stats' methods
    with pytest.raises(SystemExit):
        main(["study", "--help"])
    help_text = capsys.readouterr().out
    # the --interval entry: its choices and help (the learning-rate calibration's own bootstrap
    # interval, in --lr-calibration-seeds' help, is another thing and may be named)
    entry = help_text.split("\n  --interval {t} ", 1)[1].split("\n  --", 1)[0]
    assert "[--interval {t}]" in help_text and "{t,bootstrap}" not in help_text and "bootstrap" not in entry
    assert "invalid choice: 'bootstrap'" in refused(capsys, ["study", "--interval", "bootstrap", "--dry-run"])
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    assert "--interval {t,bootstrap}" in capsys.readouterr().out  # offered where it is taken


# ----------------------------------------------------------------------------- export checks the widths it writes


@pytest.mark.parametrize("widths", [[100, 72, 56, 32], [97, 71, 56, 32]])  # sum, multiple_of
def test_export_refuses_a_record_whose_widths_do_not_fit_its_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], widths: list[int]
) -> None:
    records = search_records()
    best = min((r for r in records if r["status"] == "complete"), key=lambda r: r["metrics"]["val_loss"])
    best["widths"] = widths  # edited by hand (or damaged): the budget says 4 x 64, multiples of 8
    run = str(write_run(tmp_path / "run", records))
    line = refused(capsys, ["export", run, "--stdout"])
    assert f"trial {best['trial_id']}" in line and str(widths) in line and "do not fit the budget" in line


def test_export_refuses_a_record_whose_widths_and_model_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tlmsearch.configs.presets import preset

    records = search_records()
    best = min((r for r in records if r["status"] == "complete"), key=lambda r: r["metrics"]["val_loss"])
    best["model"] = preset("tiny").model_config("transformer", (64, 64, 64, 64), n_layers=4).to_dict()
    run = str(write_run(tmp_path / "run", records))
    line = refused(capsys, ["export", run, "--stdout"])
    assert "differ from its model's mlp_widths [64, 64, 64, 64]" in line
