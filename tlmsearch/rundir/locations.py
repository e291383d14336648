"""`locations.json`: where everything of a run lies, so that a resume finds it again.

The driver keeps the run's own files (config, records, Optuna journal, provenance) in the run
directory; Ray Tune's experiment folders (its saved state and the trial checkpoints) go to the
trial storage: the run directory itself by default, or `SearchConfig.storage` (a shared path or
an object-store URI). A relative entry lies inside the run directory (so a moved or copied run
directory still finds it); anything else is the absolute path or URI it was written to.

    {"run_dir": "/home/me/runs/big", "config": "search.yaml", "records": "trials.jsonl",
     "journal": "optuna.log", "environment": "environment.json",
     "tune": "s3://bucket/tlm/big/tune", "fixed": "s3://bucket/tlm/big/fixed"}
"""

from __future__ import annotations

import json
from pathlib import Path

from tlmsearch.configs.storage import is_uri, join
from tlmsearch.core.validate import file_present
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.io import write_json
from tlmsearch.rundir.layout import ENVIRONMENT, FIXED_DIR, LOCATIONS, OPTUNA_LOG, SEARCH_CONFIG, TRIALS, TUNE_DIR

# what a folder key is called in the file, and its default place inside the run directory
FOLDERS: dict[str, str] = {"tune": TUNE_DIR, "fixed": FIXED_DIR}


def locations(run_dir: str | Path, trial_root: str | None = None) -> dict[str, str]:
    """The entries of a run whose trial storage is `trial_root` (None: the run directory)."""
    out = {
        "run_dir": str(Path(run_dir).resolve()),  # where it was written (a moved copy still works)
        "config": SEARCH_CONFIG,
        "records": TRIALS,
        "journal": OPTUNA_LOG,
        "environment": ENVIRONMENT,
    }
    for key, sub in FOLDERS.items():
        out[key] = sub if trial_root is None else join(trial_root, sub)
    return out


def read_locations(run_dir: str | Path) -> dict[str, str]:
    """The run's `locations.json` ({} when it has none: runs written before it existed)."""
    path = Path(run_dir) / LOCATIONS
    if not file_present(path, "run file"):  # a folder, a loop or a FIFO there: one line
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        why = type(exc).__name__
        raise ConfigError(f"{path} is damaged ({why}); it says where the run's checkpoints lie") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ConfigError(f"{path} is damaged (expected an object of strings)")
    return data


def record_folder(run_dir: str | Path, key: str, trial_root: str | None) -> Path:
    """Record that the run's `key` folder ("tune" or "fixed") lies in `trial_root` (None: the
    run directory), keeping the other entries; the file is written whole and atomically."""
    if key not in FOLDERS:
        raise ValueError(f"unknown folder {key!r}")
    data = {**locations(run_dir), **read_locations(run_dir)}
    data[key] = locations(run_dir, trial_root)[key]
    return write_json(Path(run_dir) / LOCATIONS, data)


def folder(run_dir: str | Path, key: str) -> str:
    """Where the run's `key` folder lies: an absolute path or a URI."""
    where = read_locations(run_dir).get(key, FOLDERS[key])
    if is_uri(where) or Path(where).is_absolute():
        return where
    return str((Path(run_dir) / where).resolve())
