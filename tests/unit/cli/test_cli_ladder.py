"""`tlmsearch ladder` on the command line: plan, and bad input as one line with exit status 2."""

from __future__ import annotations

import json

import pytest

from tlmsearch.cli import main


def test_plan_prints_and_json(capsys):
    points = ["--points", "tiny@5", "cpu-xs:n_layers=2@20"]  # one depth and head size
    assert main(["ladder", "plan", *points, "--seeds", "4", "--cpu-flops", "5e10"]) == 0
    out = capsys.readouterr().out
    assert "ladder plan: 2 points" in out and "CPU-hours" in out
    assert main(["ladder", "plan", "--points", "tiny@5", "cpu-xs:n_layers=2@20", "--seeds", "auto", "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["seeds"].startswith("planned") and len(p["points"]) == 2


def test_flags_change_the_ladders_training_defaults_not_trainconfigs():
    from tlmsearch.cli import build_parser
    from tlmsearch.cli.ladder import build_config
    from tlmsearch.ladders.config import ladder_train

    args = build_parser().parse_args(["ladder", "run", "--points", "tiny@5", "tiny@6", "--batch-size", "4"])
    cfg = build_config(args)
    assert cfg.train == ladder_train().replace(batch_size=4) and cfg.train.schedule == "wsd"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["ladder"], "needs an action"),
        (["ladder", "plan"], "needs --points"),
        (["ladder", "plan", "--points", "tiny@5"], "at least 2 points"),
        (["ladder", "plan", "--points", "tiny@5", "x"], "SHAPE@TOKENS_PER_PARAM"),
        (["ladder", "plan", "--points", "tiny@5", "tiny@6", "--seeds", "1"], "--seeds"),
        (["ladder", "plan", "--points", "tiny@5", "tiny@6", "--target", "big"], "neither a preset"),
        (["ladder", "plan", "--points", "tiny@5", "tiny@6", "--train", "steps=3"], "lengths are its points'"),
        (["ladder", "plan", "--points", "tiny@5", "tiny@6", "--gpu", "tpu"], "gpu='tpu'"),
        (["ladder", "run", "--points", "tiny@5", "tiny@6", "--best", "x", "--best-from", "y"], "not both"),
        (["ladder", "status", "/nonexistent/ladder"], "is not a directory"),
        (["ladder", "report", "/"], "not a ladder run directory"),
        (["ladder", "resume", "/"], "not a ladder run directory"),
    ],
)
def test_bad_input_is_one_line_exit_2(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
