"""Where everything lies in a run directory: every file name in one place, and creating one.

runs/<name>/
  search.yaml        the resolved SearchConfig (searches, comparisons)
  config.yaml        the resolved run config of `tlmsearch train`
  environment.json   seeds, versions, git commit, host, device
  locations.json     where everything of the run lies (Tune's folders may be in the trial storage)
  trials.jsonl       one TrialRecord per ended trial (append-only)
  metrics.jsonl      the evaluations of `tlmsearch train`
  compare.json       the profiles and seeds of a comparison
  noise_floor.json   the search's noise floor: uniform's seed-to-seed sd at trial fidelity
  verify.json        the seeds the last verify decided on (and its pilot and seed plan)
  optuna.log         the Optuna journal (the sampler's state)
  tune/              Ray Tune's experiment folder of the search      } here, or below
  fixed/             Ray Tune's folders of fixed-trial batches         } SearchConfig.storage
                     (verify, compare)                                 } (see locations.json)
  report.html, summary.md, summary.json   the report
  export/<trial>-<format>/                exported configs
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from tlmsearch.configs.search import check_name
from tlmsearch.core.validate import writable_dir
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.lock import lock_held

SEARCH_CONFIG = "search.yaml"
RUN_CONFIG = "config.yaml"
ENVIRONMENT = "environment.json"
LOCATIONS = "locations.json"
TRIALS = "trials.jsonl"
METRICS = "metrics.jsonl"
SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"
REPORT_HTML = "report.html"
COMPARE = "compare.json"
VERIFY = "verify.json"
NOISE_FLOOR = "noise_floor.json"
OPTUNA_LOG = "optuna.log"
TUNE_DIR = "tune"
FIXED_DIR = "fixed"
EXPORT_DIR = "export"
# files that hold a run's resolved config, in the order they are looked for
CONFIG_FILES = (SEARCH_CONFIG, "compare.yaml")
# every file a run directory may hold (each must be a regular file when it is there)
RUN_FILES = (
    *CONFIG_FILES, RUN_CONFIG, ENVIRONMENT, LOCATIONS, TRIALS, METRICS, SUMMARY_JSON, SUMMARY_MD, REPORT_HTML,
    COMPARE, VERIFY, NOISE_FLOOR, OPTUNA_LOG,
)  # fmt: skip


# what a command writes into its run directory before anything trains: a directory that holds
# nothing else (and no folder with anything in it) records nothing, so a refusal may remove it
# and a retry under the same name may reuse it (the study's own files are named in study_files)
UNSTARTED_FILES = frozenset(
    {*CONFIG_FILES, RUN_CONFIG, ENVIRONMENT, LOCATIONS, COMPARE, ".lock", "study.yaml", "study_state.json", "cost.json",
     "ladder.yaml", "ladder_state.json"}
)  # fmt: skip
# run directories this process created (`create_run_dir`), for `discard_unstarted`
_MADE: list[Path] = []


def unstarted(path: str | Path, depth: int = 2) -> bool:
    """Whether `path` is a run directory that holds nothing a run recorded: only the files written
    before training (`UNSTARTED_FILES`) and folders that hold nothing recorded either (a ladder's
    point, a study's architecture: `depth` levels of them), no trial record, journal or checkpoint."""
    path = Path(path)
    try:
        if path.is_symlink() or not path.is_dir():
            return False
        for entry in path.iterdir():
            if entry.is_symlink():
                return False
            if entry.is_dir():
                if any(entry.iterdir()) and not (depth > 0 and unstarted(entry, depth - 1)):
                    return False
            elif entry.name not in UNSTARTED_FILES:
                return False
    except OSError:
        return False
    return True


def remember(path: Path) -> None:
    """Count `path`, about to be made by this process some other way than `create_run_dir` (a
    search's own run directory), among the run directories it created (`created`)."""
    if not path.exists():
        _MADE.append(path)


def created() -> list[Path]:
    """The run directories this process created and still holds, the first first (a ladder's or a
    study's own before its points' or architectures')."""
    return list(_MADE)


def forget_created() -> None:
    """End of a command: the directories it made are no longer this process's to discard or name."""
    _MADE.clear()


def discard_unstarted() -> list[Path]:
    """Remove the run directories this process created that still hold nothing recorded (a
    command refused after making its directory, e.g. an unreadable corpus or an unreachable
    cluster), so that the corrected command is not told the name "already exists". Returns them."""
    import shutil

    removed = []
    while _MADE:
        path = _MADE.pop()
        if unstarted(path) and not lock_held(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def default_name(prefix: str = "run") -> str:
    return f"{prefix}-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"


def create_run_dir(
    runs_dir: str | Path, name: str | None = None, *, prefix: str = "run", exist_ok: bool = False
) -> Path:
    """Create `runs_dir/name` (a unique timestamped name when `name` is None) and return it.

    An explicit name that already exists is a `ConfigError` unless `exist_ok`, or unless it
    holds nothing recorded (`unstarted`: left by a refused or killed command before anything
    trained, and no process holds its lock), when it is emptied and reused; a default name gets
    a `-2`, `-3`, ... suffix instead.
    """
    root = writable_dir(runs_dir, "runs_dir", create=True)  # a file or unwritable place: one line
    if name is not None:
        path = root / check_name(name)
        if path.exists() and not exist_ok:
            if not unstarted(path) or lock_held(path):
                raise ConfigError(f"run directory {path} already exists; choose another name")
            import shutil

            shutil.rmtree(path)  # nothing recorded: the half-made directory of a refused run
        if not path.exists():
            _MADE.append(path)
        path.mkdir(exist_ok=True)
        return path
    base = default_name(prefix)
    for i in range(1, 1000):
        path = root / (base if i == 1 else f"{base}-{i}")
        try:
            path.mkdir()
            _MADE.append(path)
            return path
        except FileExistsError:
            continue
    raise ConfigError(f"cannot find a free run name under {root} for {base}")
