"""Reading a study directory (no training): its config, its phase state, and the verdicts its
records give, per architecture and per transfer target.

Both the orchestration (`tlmsearch.tuning.study`) and the report (`tlmsearch.studies.report`) read
a study through this module, so the report decides on exactly what the study decided on: each
architecture's verification verdict on the seeds its last verify decided on (`verify.json`),
each transfer verdict on the study's transfer seeds.
"""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path
from typing import Any

from tlmsearch.analysis.random_control import RANDOM_BEST, random_best
from tlmsearch.analysis.summary import run_verdicts, verdicts
from tlmsearch.configs.study import StudyConfig
from tlmsearch.core.validate import file_present
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.io import read_phases, read_verify, read_yaml, write_json
from tlmsearch.rundir.layout import SEARCH_CONFIG, TRIALS
from tlmsearch.rundir.records import LR_KIND, NOISE_KIND, SEARCH_KINDS, read_records

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
    """Whether `path` holds a study's `study.yaml` (a folder, FIFO or link loop there: one line)."""
    return Path(path).is_dir() and file_present(Path(path) / STUDY_CONFIG, "study file")


def load_config(study_dir: str | Path) -> StudyConfig:
    path = Path(study_dir) / STUDY_CONFIG
    if not path.is_file():
        raise ConfigError(f"{study_dir} is not a study directory (no {STUDY_CONFIG})")
    raw = read_yaml(path)
    section = raw.get("search") if isinstance(raw, dict) else None
    if isinstance(section, dict) and "lr_calibration_seeds" not in section:
        # written before the calibration's seeds existed: its searches calibrated with one seed a rate
        raw = {**raw, "search": {**section, "lr_calibration_seeds": 1}}
    return StudyConfig.from_dict(raw, where=str(path))


def read_state(study_dir: str | Path) -> dict[str, Any]:
    """{"phases": {key: {"status": pending|running|done, ...}}} ({} phases before the first write);
    a damaged state file refused in one line (`rundir.io.read_phases`)."""
    return read_phases(Path(study_dir) / STUDY_STATE, f"tlmsearch resume {study_dir}", "phase")


def study_damage(study_dir: str | Path, cfg: StudyConfig | None = None) -> list[str]:
    """What is broken or gone of the records a study's state says it made, one sentence each
    ([] for a healthy study, running or not).

    An architecture's folder that is not a folder is damage; once `study_state.json` says its
    search is done, the folder must hold `search.yaml` and the search's trials, and once its
    verification recorded an outcome, the verification's records; a transfer (or a random-search
    control) that is done with something trained must keep its folder and records. A phase not
    yet done asks for nothing: a study still running (or cut) is not damaged, its later
    architectures simply have no verdict yet.
    """
    study_dir = Path(study_dir)
    cfg = cfg if cfg is not None else load_config(study_dir)
    phases = read_state(study_dir)["phases"]

    def done(key: str) -> dict[str, Any] | None:
        phase = phases.get(key)
        return phase if isinstance(phase, dict) and phase.get("status") == "done" else None

    problems: list[str | None] = []
    for arch in cfg.archs:
        searched, verified = done(f"{arch}/search"), done(f"{arch}/verify")
        outcome = verified.get("outcome") if verified is not None else None
        ran = searched is not None or outcome is not None
        sub = study_dir / arch
        whose = f"the search of {arch}"
        problem = _folder_problem(sub, whose, needed=ran)
        if problem is None and ran:
            problem = _file_problem(sub / SEARCH_CONFIG, whose, "its config") or _records_problem(
                sub, whose, (*SEARCH_KINDS, NOISE_KIND, LR_KIND), "the search's trial records"
            )
            if problem is None and outcome is not None:
                whose = f"the verification of {arch} (outcome {outcome})"
                problem = _records_problem(sub, whose, ("verify",), "the verification's records")
        problems.append(problem)
        # each: a phase, its folder, who, its records' kinds, the fact saying it trained something
        for key, sub, whose, kinds, fact in (
            (f"transfer/{arch}", transfer_dir(study_dir, arch), f"the transfer to {arch}", (TRANSFER_KIND,),
             "profiles"),
            (f"{arch}/random", random_dir(study_dir, arch), f"the random search of {arch}", SEARCH_KINDS, "best"),
        ):  # fmt: skip
            phase = done(key)
            if phase is not None and phase.get(fact):  # trained something (an empty transfer makes no folder)
                problem = _folder_problem(sub, whose, needed=True)
                problems.append(problem or _records_problem(sub, whose, kinds, "its trial records"))
    return [p for p in problems if p]


def damage_text(study_dir: str | Path, problems: list[str], consequence: str = "") -> str:
    """One line: what `study_damage` found, and how to put it right."""
    return (
        f"study {study_dir} is damaged{consequence}: " + "; ".join(problems) + ". Put it back from a copy; or, to "
        f"train it again, move what is damaged aside, delete {Path(study_dir) / STUDY_STATE} and run `tlmsearch resume "
        f"{study_dir}` (every phase then checks its own records; nothing finished is trained twice)"
    )


def _folder_problem(sub: Path, whose: str, *, needed: bool) -> str | None:
    """What is wrong with the folder `sub` of `whose` (None: a folder, or absent and not needed)."""
    if sub.is_dir():
        return None
    if sub.exists() or sub.is_symlink():
        kind = "a file" if sub.is_file() else "not a folder"
        return f"{sub} is {kind}; it should be the folder of {whose} (search.yaml, trials.jsonl)"
    if needed:
        return f"{sub} is missing, although {STUDY_STATE} says {whose} is done (expected: a folder with its records)"
    return None


def _file_problem(path: Path, whose: str, what: str) -> str | None:
    if path.is_file():
        return None
    state = "is a folder, not a file" if path.is_dir() else "is missing"
    return f"{path} {state}, although {STUDY_STATE} says {whose} is done; it should hold {what}"


def _records_problem(sub: Path, whose: str, kinds: tuple[str, ...], what: str) -> str | None:
    trials = sub / TRIALS
    if not trials.is_file():
        return _file_problem(trials, whose, what)
    if not any(r.kind in kinds for r in read_records(sub)):
        return f"{trials} holds none of {what} (emptied or damaged), although {STUDY_STATE} says {whose} is done"
    return None


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
    (top_k, seeds, max_seeds, pilot_seeds, margin, alpha, controls, named_controls, rate_check, pack,
    allow_collapsed), so a later
    `tlmsearch verify RUN_DIR` (say with a higher --max-seeds) re-trains the same profiles and
    decides at the same levels. None when `run_dir` is not an architecture's search of a study."""
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
    options: dict[str, Any] = {}
    if cfg.search.train.tokens_per_param:  # the deciding length (`config.deciding_train`), or the searches' with 0
        options["train"] = {"tokens_per_param": max(cfg.search.train.tokens_per_param, cfg.verify_tokens_per_param)}
    return options | {
        "top_k": cfg.top_k,
        "seeds": cfg.verify_seeds,
        "max_seeds": cfg.max_seeds,
        "pilot_seeds": cfg.pilot_seeds,
        "looks": cfg.verify_looks,
        "margin": cfg.margin,
        "alpha": cfg.alpha,
        "controls": cfg.controls,
        "named_controls": named,
        "rate_check": cfg.rate_check,
        "pack": cfg.pack,
        "allow_collapsed": cfg.allow_collapsed,
        "reference": cfg.reference,
    }


def transfer_seeds(cfg: StudyConfig) -> list[int]:
    """Fresh seeds for the transfer, after every seed a search or a planned verification uses."""
    first = cfg.search.seed + cfg.max_seeds + 1
    return [first + i for i in range(cfg.transfer_seeds)]


def own_verdict(cfg: StudyConfig, study_dir: str | Path, arch: str) -> dict[str, Any] | None:
    """`arch`'s verification verdict (on the seeds its verify decided on), or None before one."""
    sub = Path(study_dir) / arch
    if not (sub / SEARCH_CONFIG).is_file():
        return None
    records = read_records(sub)
    if not any(r.kind == "verify" for r in records):
        return None
    plan = read_verify(sub)
    vs = run_verdicts(
        records, plan, margin=cfg.margin, alpha=cfg.alpha, arch=arch, space=cfg.search.space
    )  # none while unfinished
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
