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

from tlmsearch.errors import ConfigError
from tlmsearch.search_config import check_name
from tlmsearch.validate import writable_dir

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


def default_name(prefix: str = "run") -> str:
    return f"{prefix}-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"


def create_run_dir(
    runs_dir: str | Path, name: str | None = None, *, prefix: str = "run", exist_ok: bool = False
) -> Path:
    """Create `runs_dir/name` (a unique timestamped name when `name` is None) and return it.

    An explicit name that already exists is a `ConfigError` unless `exist_ok`; a default name
    gets a `-2`, `-3`, ... suffix instead.
    """
    root = writable_dir(runs_dir, "runs_dir", create=True)  # a file or unwritable place: one line
    if name is not None:
        path = root / check_name(name)
        if path.exists() and not exist_ok:
            raise ConfigError(f"run directory {path} already exists; choose another name")
        path.mkdir(exist_ok=True)
        return path
    base = default_name(prefix)
    for i in range(1, 1000):
        path = root / (base if i == 1 else f"{base}-{i}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise ConfigError(f"cannot find a free run name under {root} for {base}")
