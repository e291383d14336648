"""Reading a study directory (no training): its config, its phase state, and the verdicts its
records give, per architecture and per transfer target.

Both the orchestration (`tlmsearch.tuning.study`) and the report (`tlmsearch.study_report`) read
a study through this module, so the report decides on exactly what the study decided on: each
architecture's verification verdict on the seeds its last verify decided on (`verify.json`),
each transfer verdict on the study's transfer seeds.
"""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path
from typing import Any

from tlmsearch.analysis.summary import run_verdicts, verdicts
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.io import read_json_object, read_verify, read_yaml, write_json
from tlmsearch.rundir.layout import SEARCH_CONFIG
from tlmsearch.rundir.records import read_records
from tlmsearch.study_config import StudyConfig

STUDY_CONFIG = "study.yaml"
STUDY_STATE = "study_state.json"
TRANSFER_KIND = "compare"  # transfer records are seed-paired comparisons, read by `verdicts` as such
_STATE_LOCK = threading.Lock()  # a study's phases run in threads of one driver (`tuning.overlap`)


def transfer_dir(study_dir: str | Path, arch: str) -> Path:
    return Path(study_dir) / f"transfer-{arch}"


def random_dir(study_dir: str | Path, arch: str) -> Path:
    """The random-search companion of `arch`'s search (`StudyConfig.random_control`)."""
    return Path(study_dir) / f"random-{arch}"


def is_study(path: str | Path) -> bool:
    return (Path(path) / STUDY_CONFIG).is_file()


def load_config(study_dir: str | Path) -> StudyConfig:
    path = Path(study_dir) / STUDY_CONFIG
    if not path.is_file():
        raise ConfigError(f"{study_dir} is not a study directory (no {STUDY_CONFIG})")
    return StudyConfig.from_dict(read_yaml(path), where=str(path))


def read_state(study_dir: str | Path) -> dict[str, Any]:
    """{"phases": {key: {"status": pending|running|done, ...}}} ({} phases before the first write)."""
    path = Path(study_dir) / STUDY_STATE
    try:
        state = read_json_object(path)
        if state is not None and not isinstance(state.get("phases"), dict):
            raise ConfigError(f"{path}: no phases")
    except ConfigError as e:
        why = str(e).removeprefix(f"{path}: ")
        raise ConfigError(
            f"{path} is damaged ({why}): delete it and run `tlmsearch resume {study_dir}`; every phase then "
            "checks its own records again and nothing finished is trained twice"
        ) from None
    return state if state is not None else {"phases": {}}


def set_phase(study_dir: str | Path, key: str, status: str, **extra: Any) -> None:
    """Record one phase's status (and `extra` facts) in the state file, atomically; a phase
    keeps the time it `started` (last went running) once it is done."""
    with _STATE_LOCK:
        state = read_state(study_dir)
        stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        before = state["phases"].get(key, {})
        started = stamp if status == "running" else before.get("started")
        state["phases"][key] = {"status": status, "at": stamp, **({"started": started} if started else {}), **extra}
        write_json(Path(study_dir) / STUDY_STATE, state)


def verify_options(run_dir: str | Path) -> dict[str, Any] | None:
    """How the study holding `run_dir` verified that architecture: `verify`'s keyword arguments
    (top_k, seeds, max_seeds, pilot_seeds, margin, alpha, controls, named_controls), so a later
    `tlmsearch verify RUN_DIR` (say with a higher --max-seeds) re-trains the same profiles and
    decides at the same levels. None when `run_dir` is not an architecture's search of a study."""
    from tlmsearch.analysis.random_control import RANDOM_BEST, random_best

    run_dir = Path(run_dir).resolve()  # `verify .` from inside the architecture's folder too
    study_dir = run_dir.parent
    if not is_study(study_dir):
        return None
    cfg = load_config(study_dir)
    if run_dir.name not in cfg.archs:
        return None
    named: dict[str, dict[str, Any]] = {}
    if cfg.random_control:
        found = random_best(read_records(random_dir(study_dir, run_dir.name)), read_records(run_dir))
        if found is not None:
            named[RANDOM_BEST] = dict(found.profile)
    return {
        "top_k": cfg.top_k,
        "seeds": cfg.verify_seeds,
        "max_seeds": cfg.max_seeds,
        "pilot_seeds": cfg.pilot_seeds,
        "margin": cfg.margin,
        "alpha": cfg.alpha,
        "controls": cfg.controls,
        "named_controls": named,
    }


def transfer_seeds(cfg: StudyConfig) -> list[int]:
    """Fresh seeds for the transfer, after every seed a search or a planned verification uses."""
    first = cfg.seed + cfg.max_seeds + 1
    return [first + i for i in range(cfg.transfer_seeds)]


def own_verdict(cfg: StudyConfig, study_dir: str | Path, arch: str) -> dict[str, Any] | None:
    """`arch`'s verification verdict (on the seeds its verify decided on), or None before one."""
    sub = Path(study_dir) / arch
    if not (sub / SEARCH_CONFIG).is_file():
        return None
    records = read_records(sub)
    if not any(r.kind == "verify" for r in records):
        return None
    vs = run_verdicts(records, read_verify(sub), margin=cfg.margin, alpha=cfg.alpha, arch=arch)  # none while unfinished
    return vs[0].to_dict() if vs else None


def transfer_verdict(cfg: StudyConfig, study_dir: str | Path, arch: str) -> dict[str, Any] | None:
    """The seed-paired verdict of the transferred profiles against cosine on `arch` (or None)."""
    sub = transfer_dir(study_dir, arch)
    if not (sub / SEARCH_CONFIG).is_file():
        return None
    vs = verdicts(
        read_records(sub), margin=cfg.margin, alpha=cfg.alpha, arch=arch, kinds=(TRANSFER_KIND,),
        seeds=transfer_seeds(cfg),
    )  # fmt: skip
    return vs[0].to_dict() if vs else None
