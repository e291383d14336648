"""`tlmsearch profiles --throughput`: bad input in one line; a tiny real measurement as JSON."""

from __future__ import annotations

import json

import pytest

from tlmsearch.cli import main


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--layers", "4", "--base-width", "64"], "--throughput needs --preset"),
        (["--preset", "tiny", "--repeats", "0"], "--repeats"),
        (["--preset", "tiny", "--arch", "nope"], "--arch"),
    ],
)
def test_bad_throughput_input_is_one_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles", "--throughput", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_throughput_json_ranks_every_profile_against_uniform(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["profiles", "--preset", "tiny", "--family", "linear:start=1.5,end=0.5", "--throughput",
                 "--repeats", "2", "--batch-size", "2", "--json"])  # fmt: skip
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["mode"] for r in out["rankings"]] == ["train", "infer"]
    for r in out["rankings"]:
        assert {p["name"] for p in r["profiles"]} == {"uniform", "linear:start=1.5,end=0.5"}
        assert r["noise_floor"] >= 0
        assert all(len(p["seconds"]) == 2 and p["ratio_lo"] <= p["ratio"] <= p["ratio_hi"] for p in r["profiles"])
