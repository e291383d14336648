"""A search where every trial fails ends with the documented exit status, not 0 (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlmsearch.cli import main
from tlmsearch.cli.search import EXIT_ALL_FAILED

pytestmark = pytest.mark.usefixtures("ray_session")


FAILING_SPACE = '''
"""A space that passes the check before the search (a throwaway study) and then fails every
trial of the search (study "search"): it returns a profile the budget cannot hold."""
from tlmsearch.profiles import ProfileSpec

NAME = "always-fails"


def sample(trial, n_layers):
    trial.suggest_float("x", 0.0, 1.0)
    if trial.study.study_name != "search":
        return ProfileSpec(family="uniform", params={})
    return ProfileSpec(family="free", params={"l0": 0.0, "l1": 0.0})  # 2 logits for 4 layers
'''


@pytest.mark.slow
def test_a_real_search_where_every_trial_fails_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    space = tmp_path / "failing.py"
    space.write_text(FAILING_SPACE)
    code, _, err = _run(
        capsys, "search", "--space", str(space), "--no-baselines", "--trials", "2", "--name", "allfail",
        "--runs-dir", str(tmp_path), "--preset", "tiny", "--model", "n_layers=4", "--steps", "4",
        "--eval-windows", "2", "--batch-size", "2", "--scheduler", "none", "--noise-seeds", "0", "--quiet",
    )  # fmt: skip
    assert code == EXIT_ALL_FAILED, err
    assert "all 2 trials failed" in err


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
