"""The CLI's shape: light imports, one-line errors with exit status 2, `profiles` output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tlmsearch.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tlmsearch", *args], capture_output=True, text=True, timeout=120)


def test_import_and_help_do_not_load_heavy_libraries() -> None:
    code = (
        "import sys, tlmsearch, tlmsearch.cli\n"
        "tlmsearch.cli.build_parser()\n"
        "heavy = [m for m in ('torch', 'ray', 'plotly', 'pandas', 'optuna') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_help_lists_subcommands() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    assert "profiles" in result.stdout


def test_profiles_table(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["profiles", "--layers", "40", "--base-width", "14336", "--multiple-of", "256", "--family", "cosine"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert any(line.split() == ["0", "21504"] for line in lines)
    assert any(line.split() == ["39", "7168"] for line in lines)
    assert any(line.split() == ["sum", str(40 * 14336)] for line in lines)
    assert "front-load index" in out


def test_profiles_json(capsys: pytest.CaptureFixture[str]) -> None:
    main(["profiles", "--layers", "8", "--base-width", "512", "--multiple-of", "32", "--family", "uniform",
          "--family", "groups:early", "--json"])  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert data["budget"]["total"] == 4096
    assert [p["profile"] for p in data["profiles"]] == ["uniform", "groups:third=early"]
    assert all(p["sum"] == 4096 for p in data["profiles"])
    assert data["profiles"][1]["front_load"] < 0.5


def test_profiles_plot(tmp_path: Path) -> None:
    pytest.importorskip("tlmsearch.plots")
    out = tmp_path / "p.html"
    assert main(["profiles", "--layers", "6", "--base-width", "64", "--plot", str(out)]) == 0
    html = out.read_text()
    assert "cosine:start=1.5,end=0.5" in html and '<script src="http' not in html


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--layers", "0", "--base-width", "64"], "--layers=0 must be a positive integer"),
        (["--layers", "-2", "--base-width", "64"], "--layers=-2"),
        (["--layers", "4", "--base-width", "100", "--multiple-of", "64"], "not a multiple"),
        (["--layers", "4", "--base-width", "64", "--min-width", "80", "--max-width", "70"], "min_width=80 > max_width"),
        (["--layers", "4", "--base-width", "64", "--max-width", "32"], "infeasible"),
        (["--layers", "4", "--base-width", "64", "--family", "zigzag"], "unknown profile family"),
        (["--layers", "4", "--base-width", "64", "--family", "cosine:start"], "malformed"),
        (["--layers", "4", "--base-width", "64", "--family", "cosine:tilt=1"], "no parameter 'tilt'"),
        (["--layers", "4"], "give --layers and --base-width"),
        (["--layers", "x"], "invalid int value"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = run_cli("profiles", *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(("tlmsearch profiles: error:", "tlmsearch: error:"))


@pytest.mark.slow
def test_profiles_lists_spaces(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles", "--spaces", "--layers", "16"]) == 0
    out = capsys.readouterr().out
    for name in ("taper", "cosine", "families", "monotone", "knots", "free"):
        assert f"  {name} " in out
    assert any(line.split()[:2] == ["free", "16"] for line in out.splitlines()[1:])
    # the prior's fractions of shapes, printed per space (issue 12: the default space's are stated)
    assert "non-incr non-decr non-mono const" in " ".join(out.split())
    (taper,) = [line.split() for line in out.splitlines() if line.split()[:1] == ["taper"]]
    shares = [float(x.rstrip("%")) for x in taper[2:6]]
    assert sum(shares) == pytest.approx(100, abs=0.5) and min(shares[:3]) > 10  # mass on each kind of shape


def test_profiles_says_when_a_joint_profile_moves_more_than_the_mlp(capsys) -> None:
    """The widths `profiles` prints are a joint profile's MLP shape; for one that moves heads or
    block widths too, a note on stderr says the trained MLP widths are solved with them."""
    from tlmsearch.cli import main

    assert main(["profiles", "--preset", "cpu-xs", "--family", "joint:mode=block,ratio=0.3,position=0.75"]) == 0
    err = capsys.readouterr().err
    assert "moves heads or block widths too" in err
    assert main(["profiles", "--preset", "cpu-xs", "--family", "joint:mode=mlp,start=1.5,end=0.5"]) == 0
    assert "moves heads" not in capsys.readouterr().err
