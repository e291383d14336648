"""What was asked is run or refused, never silently reduced (issue 50, items 3, 9, 10, 11): each
refusal is one line, exit 2, before anything trains or is written. Nothing here starts Ray: the
trainings are replaced by fakes that fail the test when called."""

from __future__ import annotations

from pathlib import Path

import pytest
from refusals import one_line, refused_verify, search_run

from tlmsearch.analysis.sequential import look_schedule
from tlmsearch.cli import main
from tlmsearch.configs.verify import VerifyOptions
from tlmsearch.errors import ConfigError

# ----------------------------------------------------------------------------- item 9: looks


def test_looks_need_one_seed_more_than_looks_by_the_schedule() -> None:
    from tlmsearch.configs.verify import min_seeds_for_looks

    # K looks at n_k = max(2, ceil(k N / K)) are K distinct looks from N = K + 1 seeds on, never below
    for looks in range(2, 21):
        need = min_seeds_for_looks(looks)
        assert need == looks + 1
        assert len(look_schedule(need, looks)) == looks
        assert len(look_schedule(need - 1, looks)) < looks
    assert look_schedule(2, 5) == (2,)  # what `--looks 5 --seeds 2` ran: one look


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--looks", "5", "--seeds", "2"], "--looks=5"),  # ran "1 looks"
        (["--looks", "2", "--seeds", "2"], "--looks=2"),  # one look of 2 seeds: not sequential
        (["--looks", "4", "--seeds", "4"], "--looks=4"),  # 2, 2, 3, 4: three looks
        (["--looks", "5", "--pilot-seeds", "3", "--max-seeds", "8"], "--looks=5"),  # room for 5 fresh seeds only
        (["--spending", "pocock"], "--spending"),  # ignored without --looks
        (["--spending", "obf", "--seeds", "4"], "--spending"),
    ],
)
def test_verify_refuses_what_it_would_reduce(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flags: list[str], named: str
) -> None:
    line = refused_verify(search_run(tmp_path, monkeypatch), flags, capsys)
    assert named in line, line


def test_looks_refusal_names_what_is_allowed() -> None:
    with pytest.raises(ConfigError, match=r"looks=5 .*seeds=2.* 1 look.*at least 6") as info:
        VerifyOptions.of(seeds=2, looks=5)
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match=r"--looks=5.*--max-seeds=8.*allowed: --max-seeds >= 9"):
        VerifyOptions.of(flags=True, looks=5, pilot_seeds=3, max_seeds=8)
    assert VerifyOptions.of(seeds=6, looks=5).looks == 5  # 2, 3, 4, 5, 6: five looks
    assert VerifyOptions.of(looks=5, pilot_seeds=3, max_seeds=9).looks == 5
    with pytest.raises(ConfigError, match="spending"):
        VerifyOptions.of(spending="pocock")  # Python's API: asked for, without looks
    assert VerifyOptions.of(spending="pocock", looks=2, seeds=3).spending == "pocock"


# ----------------------------------------------------------------------------- item 10: plan --run ''


@pytest.mark.parametrize("value", ["", "  "])
def test_plan_refuses_an_empty_run(capsys: pytest.CaptureFixture[str], value: str) -> None:
    assert main(["plan", "--run", value]) == 2
    line = one_line(capsys)
    assert "--run" in line and "run directory" in line, line
    assert capsys.readouterr().out == ""  # no default study priced
