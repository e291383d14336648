"""A refused `ladder run` leaves nothing (issue 50, items 1 and 3): the ladder's folder, its
ladder.yaml, its state and a point's half-made run directory go, so the corrected command may use
the same name; `--device cuda` without a GPU is refused up front with train's own reason. No Ray
starts: each refusal comes before a trial would."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlmsearch.cli import main
from tlmsearch.rundir.layout import unstarted

POINTS = ["--points", "tiny:n_layers=4@1", "tiny:n_layers=4,d_model=48,n_heads=3@1", "--lr-calibration", "off",
          "--profiles", "linear:start=1.5,end=0.5"]  # fmt: skip


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], *words: str) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, (code, err)
    for w in words:
        assert w in err, err
    return err


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--address", "127.0.0.1:1"], ("127.0.0.1:1",)),  # no cluster there
        (["--corpus", "text:/nonexistent/corpus.txt"], ("/nonexistent/corpus.txt",)),
        (["--cpus-per-trial", "100000"], ("cpus_per_trial=100000",)),  # fits on no node here
    ],
)
def test_a_refused_ladder_run_leaves_nothing_and_the_name_stays_free(
    flags: list[str], words: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # not --quiet: the refusal comes before the ladder's price line, so it is the only line
    argv = ["ladder", "run", *POINTS, "--name", "lad", "--runs-dir", str(tmp_path), "--corpus", "pydoc", *flags]
    first = _refused(capsys, argv, *words)
    assert list(tmp_path.iterdir()) == []
    assert _refused(capsys, argv) == first  # the same refusal again, not "already exists"


def test_device_cuda_without_a_gpu_is_refused_up_front(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    argv = ["ladder", "run", *POINTS, "--name", "lad", "--runs-dir", str(tmp_path), "--device", "cuda"]
    _refused(capsys, argv, "CUDA")
    assert list(tmp_path.iterdir()) == []


def test_a_ladder_folder_that_recorded_nothing_is_unstarted(tmp_path: Path) -> None:
    lad = tmp_path / "lad"
    point = lad / "tiny-t1"
    point.mkdir(parents=True)
    for name in ("ladder.yaml", "ladder_state.json"):
        (lad / name).write_text("{}")
    for name in ("search.yaml", "environment.json", "locations.json", ".lock"):
        (point / name).write_text("{}")
    (point / "tune").mkdir()
    assert unstarted(lad)
    (point / "trials.jsonl").write_text("{}\n")  # a run recorded: kept
    assert not unstarted(lad)
    (point / "trials.jsonl").unlink()
    (point / "tune" / "experiment_state.json").write_text("{}")  # Tune started: kept
    assert not unstarted(lad)
