"""A search's Optuna study read back from its journal, for the tests that check what it holds."""

from __future__ import annotations

from pathlib import Path

import optuna

from tlmsearch.rundir.layout import OPTUNA_LOG
from tlmsearch.tuning.searcher import STUDY_NAME, open_storage


def open_study(run_dir: Path) -> optuna.Study | None:
    """The search's study in `run_dir`'s journal (None when there is no journal or study yet)."""
    if not (run_dir / OPTUNA_LOG).is_file():
        return None
    try:
        return optuna.load_study(study_name=STUDY_NAME, storage=open_storage(str(run_dir)))
    except KeyError:  # the journal holds no study of that name (created, then killed)
        return None
