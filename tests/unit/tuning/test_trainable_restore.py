"""A trial checkpoint cut short by a kill (its copy into the run directory unfinished) makes the
trial train again from step 0, instead of failing a healthy trial (no Ray)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from tlmsearch.training.trainer import CHECKPOINT_FILE
from tlmsearch.tuning.trainable import CURVE_FILE, restored_curve

CURVE = [{"step": 10.0, "val_loss": 4.5}, {"step": 20.0, "val_loss": 4.1}]


def _checkpoint(work: Path) -> bytes:
    work.mkdir()
    torch.save({"step": 20, "model": {"w": torch.ones(64, 64)}}, work / CHECKPOINT_FILE)
    (work / CURVE_FILE).write_text(json.dumps(CURVE))
    return (work / CHECKPOINT_FILE).read_bytes()


def test_a_whole_checkpoint_keeps_its_curve(tmp_path: Path) -> None:
    _checkpoint(tmp_path / "w")
    assert restored_curve(tmp_path / "w", CHECKPOINT_FILE) == CURVE
    assert (tmp_path / "w" / CHECKPOINT_FILE).is_file()


def test_a_cut_checkpoint_or_curve_restarts_the_trial(tmp_path: Path) -> None:
    data = _checkpoint(tmp_path / "a")
    for cut in (0, 10, len(data) // 2, len(data) - 1):
        (tmp_path / "a" / CHECKPOINT_FILE).write_bytes(data[:cut])
        (tmp_path / "a" / CURVE_FILE).write_text(json.dumps(CURVE))
        assert restored_curve(tmp_path / "a", CHECKPOINT_FILE) == [], cut
        assert not (tmp_path / "a" / CHECKPOINT_FILE).exists() and not (tmp_path / "a" / CURVE_FILE).exists()
    _checkpoint(tmp_path / "b")
    (tmp_path / "b" / CURVE_FILE).write_text(json.dumps(CURVE)[:-5])
    assert restored_curve(tmp_path / "b", CHECKPOINT_FILE) == []
    (tmp_path / "c").mkdir()  # a checkpoint folder without the trainer's file
    assert restored_curve(tmp_path / "c", CHECKPOINT_FILE) == []


def test_a_resumed_trial_starts_from_the_checkpoint_its_config_names_or_from_zero(tmp_path: Path) -> None:
    """`checkpoints.RESTORE` names an earlier session's checkpoint of the same trial: copied in,
    its curve returned; a checkpoint gone meanwhile (or unreadable) means step 0, not a failure."""
    from tlmsearch.tuning.trainable import restore

    data = _checkpoint(tmp_path / "earlier")
    (tmp_path / "work").mkdir()
    assert restore(None, str(tmp_path / "earlier"), tmp_path / "work") == CURVE
    assert (tmp_path / "work" / CHECKPOINT_FILE).read_bytes() == data
    (tmp_path / "fresh").mkdir()
    assert restore(None, str(tmp_path / "gone"), tmp_path / "fresh") == []
    assert restore(None, None, tmp_path / "fresh") == [] and not any((tmp_path / "fresh").iterdir())
