"""A ladder cut from a point on (`ladder resume --max-seeds N --profiles ...`): the points whose
verification has not begun take the new seed cap and profiles, a begun point keeps what it began
with, whatever the state file says. On a copy of the committed 8-layer ladder (its first point
verified with 20 seeds and four profiles, its second put back to calibrating, two not begun); no training:
the search and the verification are replaced by recorders of what they were asked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tlmsearch.cli import main
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.ladders.cut import change_plan
from tlmsearch.ladders.files import load_config
from tlmsearch.ladders.point_plan import POINT_PLAN, PointPlan, plan_of
from tlmsearch.rundir.lock import run_lock
from tlmsearch.tuning import ladder as ladder_mod

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "runs/reference/ladder8"
FIRST = "cpu-xs-d_model16-n_heads1-base_width48-n_layers8-t20"
SECOND = "cpu-xs-d_model32-n_heads2-base_width96-n_layers8-t20"
THIRD = "cpu-xs-d_model48-n_heads3-base_width144-n_layers8-t20"
FOURTH = "cpu-xs-n_layers8-t20"
FIRST_TEXT = "cpu-xs:d_model=16,n_heads=1,base_width=48,n_layers=8@20"
ALL4 = ("openelm", "reverse", "middle", "bowtie")


@pytest.fixture
def ladder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "ladder8"
    shutil.copytree(REFERENCE, copy)
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    # the ladder as it was before its cut (the committed one has been cut since): 20 seeds, four profiles,
    # the second point calibrating (its verification, trained since in the depth arm, taken out), the
    # third and fourth not begun (their verifications, trained since, taken out too)
    for plan in copy.glob(f"*/{POINT_PLAN}"):
        plan.unlink()
    for point in (copy / SECOND, copy / THIRD, copy / FOURTH):
        for name in ("verify.json", "summary.json", "summary.md", "report.html"):
            (point / name).unlink(missing_ok=True)
        if (point / "trials.jsonl").exists():
            lines = (point / "trials.jsonl").read_text().splitlines()
            (point / "trials.jsonl").write_text("".join(f"{x}\n" for x in lines if json.loads(x)["kind"] != "verify"))
    uncut = LadderConfig.load(copy / "ladder.yaml").replace(max_seeds=20, profiles=ALL4)
    (copy / "ladder.yaml").write_text(uncut.to_yaml())
    return copy


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, tuple[str, ...]]]:
    """What each point's verification was asked for: (point folder, max_seeds, controls)."""
    calls: list[tuple[str, int, tuple[str, ...]]] = []

    def verify(run_dir: Path, **kw: Any) -> SimpleNamespace:
        calls.append((Path(run_dir).name, kw["max_seeds"], tuple(kw["controls"])))
        return SimpleNamespace(verdicts=[], new_records=[])

    monkeypatch.setattr(ladder_mod.runner, "search_or_resume", lambda cfg, sub, **kw: None)
    monkeypatch.setattr(ladder_mod.verifying, "verify", verify)
    monkeypatch.setattr(ladder_mod, "finished", lambda records: True)  # every point's search counts as done
    monkeypatch.setattr(ladder_mod, "time_left_line", lambda left: "")
    monkeypatch.setattr(ladder_mod, "time_left", lambda *a, **k: {})
    return calls


def _yaml(ladder: Path) -> str:
    return (ladder / "ladder.yaml").read_text()


def test_the_points_not_begun_take_the_cut_and_the_begun_one_keeps_its_plan(
    ladder: Path, asked: list[tuple[str, int, tuple[str, ...]]]
) -> None:
    lines = change_plan(ladder, max_seeds=8, profiles=["openelm", "reverse"])
    assert len(lines) == 2
    assert lines[0].startswith(
        f"{ladder}: max-seeds 20 -> 8 for cpu-xs:d_model=32,n_heads=2,base_width=96,n_layers=8@20"
    )
    assert lines[0].endswith(f"; {FIRST_TEXT} keeps its 20 (verification begun)")
    assert "profiles openelm reverse middle bowtie -> openelm reverse for " in lines[1]
    # a second cut: the begun point is said to keep its own plan, not the ladder's last values
    (again,) = change_plan(ladder, max_seeds=6)
    assert again.startswith(f"{ladder}: max-seeds 8 -> 6 for cpu-xs:d_model=32")
    assert again.endswith("n_layers=8@20 keeps its 20 (verification begun)")
    change_plan(ladder, max_seeds=8)
    assert json.loads((ladder / FIRST / POINT_PLAN).read_text()) == {"max_seeds": 20, "profiles": list(ALL4)}
    assert not (ladder / SECOND / POINT_PLAN).exists()  # calibrating, not verifying: it takes the cut
    cfg = load_config(ladder)
    assert (cfg.max_seeds, cfg.profiles) == (8, ("openelm", "reverse"))

    ladder_mod.run_ladder(ladder, progress=False)
    by_point = {name: (seeds, controls) for name, seeds, controls in asked}
    assert by_point[FIRST] == (20, ALL4)
    others = [v for k, v in by_point.items() if k != FIRST]
    assert len(others) == 3 and set(others) == {(8, ("openelm", "reverse"))}
    # each point wrote the plan it began with: a later cut leaves them all as they are
    assert json.loads((ladder / SECOND / POINT_PLAN).read_text()) == {
        "max_seeds": 8,
        "profiles": ["openelm", "reverse"],
    }


def test_the_plan_lives_in_the_point_not_in_the_state_file(
    ladder: Path, asked: list[tuple[str, int, tuple[str, ...]]]
) -> None:
    change_plan(ladder, max_seeds=6)
    (ladder / "ladder_state.json").unlink()  # as the damaged-state message says to
    ladder_mod.run_ladder(ladder, progress=False)
    seeds = {name: s for name, s, _ in asked}
    assert seeds[FIRST] == 20 and seeds[SECOND] == 6


def test_a_point_verified_before_plans_were_kept_is_the_ladders_until_a_cut(ladder: Path) -> None:
    cfg = load_config(ladder)
    assert plan_of(ladder / FIRST, cfg) == PointPlan(20, ALL4)  # no file: the ladder's own
    assert change_plan(ladder, max_seeds=20, profiles=list(ALL4)) == []  # nothing changes: nothing written
    assert not (ladder / FIRST / POINT_PLAN).exists()


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"max_seeds": 2}, ("--max-seeds=2", "3 pilot seeds", ">= 5")),
        ({"profiles": ["openelm", "tapered-nonsense"]}, ("tapered-nonsense",)),
        ({"profiles": ["openelm", "openelm"]}, ("repeat",)),
    ],
)
def test_a_bad_cut_changes_nothing(ladder: Path, changes: dict[str, Any], words: tuple[str, ...]) -> None:
    before = _yaml(ladder)
    with pytest.raises(ConfigError) as err:
        change_plan(ladder, **changes)
    for w in words:
        assert w in str(err.value)
    assert _yaml(ladder) == before and not (ladder / FIRST / POINT_PLAN).exists()


def test_a_profile_named_alone_is_one_profile(ladder: Path) -> None:
    (line,) = change_plan(ladder, profiles="openelm")
    assert "profiles openelm reverse middle bowtie -> openelm for " in line
    assert load_config(ladder).profiles == ("openelm",)


def test_a_cut_when_every_point_has_begun_is_refused(ladder: Path) -> None:
    cfg = load_config(ladder)
    for spec in cfg.specs:
        (ladder / spec.name).mkdir(exist_ok=True)
        (ladder / spec.name / "verify.json").write_text('{"decision_seeds": []}')
    with pytest.raises(ConfigError, match="every point's verification has begun"):
        change_plan(ladder, max_seeds=8)
    assert "max_seeds: 20" in _yaml(ladder)


def test_a_cut_while_the_ladder_runs_is_refused(ladder: Path) -> None:
    with run_lock(ladder), pytest.raises(ConfigError):
        change_plan(ladder, max_seeds=8)
    assert "max_seeds: 20" in _yaml(ladder)


def test_the_command_line_cut_and_status(
    ladder: Path,
    asked: list[tuple[str, int, tuple[str, ...]]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the stubbed points have no records to report on: the report step says only that it ran
    monkeypatch.setattr("tlmsearch.api._finish_ladder", lambda run_dir, progress: SimpleNamespace(summary={
        "conclusion": "reported"}))  # fmt: skip
    assert main(["ladder", "resume", str(ladder), "--max-seeds", "2"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "--max-seeds=2" in err
    assert main(["ladder", "resume", str(ladder), "--quiet", "--max-seeds", "8", "--profiles"]) == 0
    assert {(s, c) for name, s, c in asked if name != FIRST} == {(8, ())}  # cosine and uniform only
    assert capsys.readouterr().out.strip() == "reported"
    (ladder / "ladder_state.json").unlink()  # the stubs' "done" phases have no records behind them
    assert main(["ladder", "status", str(ladder)]) == 0
    out = capsys.readouterr().out
    first = next(line for line in out.splitlines() if "d_model=16" in line)
    assert first.endswith("(max 20 seeds, profiles openelm reverse middle bowtie)")
    second = next(line for line in out.splitlines() if "d_model=32" in line)
    assert "max " not in second
