"""The verify/compare/report/export commands on synthetic runs: one-line errors, reports and
exports (no training, no Ray). End to end on a real search: tests/integration/test_cli_end_to_end.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from analysis_fakes import record, search_records, verify_records, write_run

from tlmsearch.cli import main


def _err_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err  # one line, no traceback
    return err[0]


# ----------------------------------------------------------------------------- fast, synthetic


@pytest.fixture()
def fake_run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", search_records() + verify_records())


def test_report_cli_on_synthetic_run(fake_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(fake_run)]) == 0
    out = capsys.readouterr().out
    assert "a better profile than cosine exists" in out and (fake_run / "report.html").exists()
    assert "[better]" not in out  # the headline says the outcome in words, once
    assert main(["report", str(fake_run), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdicts"][0]["better"] == "knots:k0=3,k1=1"


def test_status_shows_the_verdict_as_report_does(fake_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(fake_run), "--json"]) == 0
    headline = json.loads(capsys.readouterr().out)["verdicts"][0]["headline"]
    assert main(["status", str(fake_run)]) == 0
    out = capsys.readouterr().out
    assert f"): {headline}\n" in out and out.count("verdict (") == 1
    assert main(["status", str(fake_run), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdicts"][0]["outcome"] == "better"


def test_export_of_an_undecided_favourite_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "noisy", search_records() + verify_records(noise=0.05, seeds=2))
    assert main(["export", str(run), "--format", "native", "--out", str(tmp_path / "n")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    best = "the verdict's best: lowest mean loss over its 2 deciding seeds (knots:k0=3,k1=1)"
    assert first.startswith(f"exported {best}; undecided: ")
    assert "the verdict is inconclusive" in first
    assert main(["export", str(run), "--format", "widths", "--stdout"]) == 0
    assert "undecided: the verdict is inconclusive" in capsys.readouterr().err  # --stdout says it on stderr


def test_undecided_note_names_what_the_verdicts_leave_open() -> None:
    from types import SimpleNamespace as V

    from tlmsearch.export.schedule import undecided_note

    assert undecided_note([V(outcome="better", better="knots:k0=3")], "knots:k0=3") == ""
    assert "inconclusive" in undecided_note([V(outcome="inconclusive", better=None)], "knots:k0=3")
    assert "near-optimal" in undecided_note([V(outcome="near_optimal", better=None)], "knots:k0=3")
    assert undecided_note([V(outcome="near_optimal", better=None)], "cosine:start=1.5,end=0.5") == ""
    assert undecided_note([], "knots:k0=3") == ""  # no verdict yet: nothing to say


def test_export_cli_best_is_the_verified_winner(fake_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(fake_run), "--format", "widths", "--stdout"]) == 0
    captured = capsys.readouterr()
    winner = next(
        r for r in verify_records() if r["profile"]["family"] == "knots" and r["profile"]["params"]["k0"] == 3
    )
    assert json.loads(captured.out) == winner["widths"]
    assert "exact" in captured.err and "undecided" not in captured.err  # shown better than cosine
    assert main(["export", str(fake_run), "--trial", "s1", "--format", "megatron", "--out", str(fake_run / "m")]) == 0
    doc = json.loads((fake_run / "m" / "heterogeneous_layers_config.json").read_text())
    assert [b["ffn"]["ffn_hidden_size"] for b in doc["block_configs"]] == search_records()[3]["widths"]


def test_report_cli_margin_alpha_and_their_old_names(fake_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(fake_run), "--json", "--margin", "0.02", "--alpha", "0.1"]) == 0
    (v,) = json.loads(capsys.readouterr().out)["verdicts"]
    assert v["margin"] == 0.02 and v["alpha"] == 0.1 and v["outcome"] in ("better", "near_optimal", "inconclusive")
    assert "alpha 0.1" in v["headline"] and v["near_optimal"] == (v["outcome"] == "near_optimal")
    assert main(["report", str(fake_run), "--json", "--threshold", "0.02", "--confidence", "0.9"]) == 0
    (old,) = json.loads(capsys.readouterr().out)["verdicts"]
    assert old["margin"] == 0.02 and old["alpha"] == pytest.approx(0.1) and old["outcome"] == v["outcome"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["export", "{run}", "--trial", "nope"], "unknown trial id 'nope'"),
        (["export", "{run}", "--format", "onnx"], "unsupported export format 'onnx'"),
        (["export", "{empty}"], "no finished trials"),
        (["report", "{empty}"], "no finished trials"),
        (["verify", "{empty}"], "no finished trials"),
        (["report", "{missing}"], "does not exist"),
        (["export", "{missing}"], "does not exist"),
        (["verify", "{missing}"], "does not exist"),
        (["verify", "{run}", "--threshold", "2"], "--margin=2.0 must lie in (0, 1)"),
        (["verify", "{run}", "--margin", "0"], "--margin=0.0 must lie in (0, 1)"),
        (["verify", "{run}", "--margin", "-0.01"], "--margin=-0.01 must lie in (0, 1)"),
        (["report", "{run}", "--alpha", "0.5"], "--alpha=0.5 must lie in (0, 0.5)"),
        (["report", "{run}", "--alpha", "0"], "--alpha=0.0 must lie in (0, 0.5)"),
        (["compare", "--families", "cosine", "--alpha", "0.7"], "--alpha=0.7 must lie in (0, 0.5)"),
        (["report", "{run}", "--alpha", "0.05", "--confidence", "0.9"], "give --alpha or --confidence"),
        (["report", "{verified}", "--interval", "bootstrap"], "--interval bootstrap needs at least 20 seeds (got 3)"),
        (["verify", "{run}", "--interval", "bootstrap", "--seeds", "5"], "needs at least 20 seeds (got 5)"),
        (["compare", "--families", "cosine", "--interval", "bootstrap"], "needs at least 20 seeds (got 3)"),
        (["compare", "--families", "nosuch"], "unknown profile family 'nosuch'"),
    ],
)
def test_user_errors_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    run = write_run(tmp_path / "run", search_records())
    empty = write_run(tmp_path / "empty", [record("x", "uniform", 2.0, status="stopped")])
    verified = write_run(tmp_path / "verified", search_records() + verify_records())
    paths = {"run": str(run), "empty": str(empty), "missing": str(tmp_path / "missing"), "verified": str(verified)}
    argv = [a.format(**paths) for a in argv] + (["--runs-dir", str(tmp_path)] if argv[0] == "compare" else [])
    assert main(argv) == 2
    line = _err_line(capsys)
    assert line.startswith(f"tlmsearch {argv[0]}: error:") and message in line


# ----------------------------------------------------------------------------- slow, real


def test_resume_refuses_a_comparison(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "cmp", [record("c0", "uniform", 2.0, kind="compare")])
    assert main(["resume", str(run)]) == 2
    assert "no search to resume" in _err_line(capsys)
