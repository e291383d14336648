"""A cross-architecture study in one resumable run directory: per architecture a search (its
learning-rate calibration and noise floor first), with `random_control` a random-search
companion, a verification with planned seeds; then the transfer of each architecture's best to
the others (the report is `tlmsearch.api`'s, once these phases are done).

    runs/<study>/   study.yaml, study_state.json (each phase pending / running / done), cost.json,
                    <arch>/, random-<arch>/, transfer-<arch>/ (search run directories), report files

Every phase is idempotent (a search resumes from its `trials.jsonl`, `verify` and the transfer
reuse finished records), so `resume_study` after a kill re-runs the phase that was running and
trains nothing twice. The companion, the verification and the transfers train at the rate the
architecture's calibration chose (`at_search_rate`). The phases overlap (`phase_graph`, run by
`tuning.overlap.run_tasks`): each starts in its own thread on the same Ray once the phases it
needs are done, so the next search trains beside the last one's verification.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tlmsearch.analysis.collect import label
from tlmsearch.analysis.crossarch import COSINE, best_profiles
from tlmsearch.analysis.random_control import random_best
from tlmsearch.configs.resolve import resolve_trial_length
from tlmsearch.configs.storage import normalise
from tlmsearch.configs.study import StudyConfig
from tlmsearch.core.base import deciding_train
from tlmsearch.core.validate import writable_dir
from tlmsearch.costs.price import LIMIT_HOURS, check_price
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.io import write_json
from tlmsearch.rundir.layout import SEARCH_CONFIG, create_run_dir
from tlmsearch.rundir.lr import at_search_rate
from tlmsearch.rundir.records import finished, read_records
from tlmsearch.studies.cost import COST_FILE, estimate, price_arch
from tlmsearch.studies.files import (
    STUDY_CONFIG,
    STUDY_STATE,
    TRANSFER_KIND,
    load_config,
    random_dir,
    read_state,
    set_phase,
    transfer_dir,
    transfer_seeds,
    verify_options,
)
from tlmsearch.studies.phases import phase_graph, phase_keys
from tlmsearch.studies.progress import LiveView
from tlmsearch.tuning import interrupts, runner
from tlmsearch.tuning import verify as verifying  # the module: tests replace verify.verify
from tlmsearch.tuning.address import probe_address
from tlmsearch.tuning.fixed import FixedTrial, run_fixed
from tlmsearch.tuning.overlap import Task, run_tasks, tune_can_stop_threads, tuners_in_threads

# how a study priced beyond the limit shrinks (the CLI's flags; the Python API's keywords are the same names)
SHRINK_STUDY = "fewer --trials or --archs, a smaller --preset, or --tokens-per-param"


def start_study(
    cfg: StudyConfig,
    *,
    address: str | None = None,
    progress: bool = True,
    yes: bool = False,
    max_hours: float = LIMIT_HOURS,
) -> Path:
    """Price the study (nothing trains), refuse it beyond `max_hours` of this machine unless
    `yes`, then create the study directory, print the price and run every training phase."""
    cfg.check_shapes()  # profiles that build one model at this depth: one line, before anything is priced
    if address:  # an unreachable cluster: one line before the directory and the price
        probe_address(address)
    writable_dir(cfg.runs_dir, "runs_dir")  # a file, a dangling link or an unwritable place: one line before the price
    prices = {a: price_arch(cfg, a) for a in cfg.archs}  # seconds: FLOPs or recorded rates, kept in cost.json
    priced = estimate(cfg, calibration=prices)
    hours = priced.hours
    check_price(f"study {cfg.name or ''}".rstrip(), hours[1] * 3600 if hours else 0.0, yes=yes,
                limit_hours=max_hours, shrink=SHRINK_STUDY)  # fmt: skip
    study_dir = create_run_dir(cfg.runs_dir, cfg.name or None, prefix="study").resolve()
    storage = normalise(cfg.search.storage)  # absolute: a resume may run elsewhere
    cfg = cfg.replace(name=study_dir.name, search=cfg.search.replace(storage=storage))
    cfg.save(study_dir / STUDY_CONFIG)
    write_json(study_dir / STUDY_STATE, {"phases": {k: {"status": "pending"} for k in phase_keys(cfg)}})
    write_json(study_dir / COST_FILE, {"calibration": prices})
    if progress:
        print(estimate(cfg, study_dir, prices).text(), flush=True)
    return run_phases(study_dir, address=address, progress=progress)


def run_phases(study_dir: str | Path, *, address: str | None = None, progress: bool = True) -> Path:
    """Run every training phase that is not done; finished trials are never trained again. The
    "report" phase is the caller's (`tlmsearch.api`): training never writes reports.

    `phase_order="overlap"` (the default) runs each phase as soon as the phases it needs are done
    (`phase_graph`), one Tuner per thread on the same Ray, so the next architecture's search
    fills the cores the last verification leaves idle; "sequential" runs them one after another.
    With `progress`, one live line across architectures replaces the phases' own lines.
    """
    study_dir = Path(study_dir).resolve()
    cfg = load_config(study_dir)
    state = read_state(study_dir)["phases"]

    def done(key: str) -> bool:
        return state.get(key, {}).get("status") == "done"

    own: dict[str, dict[str, Any]] = {}
    exact: dict[str, dict[str, Any]] = {}
    best: dict[str, str] = {}

    def search(arch: str) -> None:
        if not done(f"{arch}/search"):
            set_phase(study_dir, f"{arch}/search", "running")
            runner.search_or_resume(
                cfg.search_config(arch, str(study_dir)), study_dir / arch, address=address, progress=False
            )
            set_phase(study_dir, f"{arch}/search", "done")

    def random(arch: str) -> None:
        key = f"{arch}/random"
        if not done(key):
            set_phase(study_dir, key, "running")
            _random_search(cfg, study_dir, arch, address)
        found = random_best(read_records(random_dir(study_dir, arch)), read_records(study_dir / arch))
        set_phase(study_dir, key, "done", best=label(found) if found is not None else None)

    def verify(arch: str) -> None:
        key = f"{arch}/verify"
        if not done(key):
            set_phase(study_dir, key, "running")
        # its seed plan (and a capped plan's warning) is printed as a line of its own
        note = None if view is None else view.note
        say = None if note is None else (lambda text: note(f"{arch}: {text}"))
        result = _verify(study_dir / arch, address, announce=say)
        if result is not None:
            own[arch] = result
        set_phase(study_dir, key, "done", outcome=own.get(arch, {}).get("outcome"))

    def choose() -> None:
        best.update(best_profiles(own))
        exact.update({p: _exact_profile(study_dir / src, p) for src, p in best.items()})

    def transfer(arch: str) -> None:
        key = f"transfer/{arch}"
        if not done(key):
            set_phase(study_dir, key, "running")
        profiles = {p: exact[p] for src, p in best.items() if src != arch and p != COSINE}
        n = _transfer(cfg, study_dir, arch, profiles, address)
        set_phase(study_dir, key, "done", profiles=sorted(profiles), trained_by_last_run=n)

    calls: dict[str, Any] = {"choose": choose}
    for arch in cfg.archs:
        calls[f"{arch}/search"] = lambda a=arch: search(a)
        calls[f"{arch}/random"] = lambda a=arch: random(a)
        calls[f"{arch}/verify"] = lambda a=arch: verify(a)
        calls[f"transfer/{arch}"] = lambda a=arch: transfer(a)
    overlap = cfg.phase_order == "overlap" and tune_can_stop_threads()
    graph = phase_graph(cfg.archs, overlap=overlap, random_control=cfg.random_control)
    if any(not done(k) for k in graph if k != "choose"):  # Ray started in the main thread (its exit
        for arch in cfg.archs:  # handlers, SIGTERM), each architecture's resources checked, before any phase
            runner.start_ray(cfg.search_config(arch, str(study_dir)), address)
    view = LiveView.start(study_dir) if progress else None
    try:
        if overlap:
            stop = threading.Event()
            with tuners_in_threads(stop):
                run_tasks([Task(k, calls[k], after) for k, after in graph.items()], stop=stop)
        else:
            for key in graph:
                calls[key]()
    except KeyboardInterrupt:
        interrupts.say(f"study interrupted; resume the whole study with: tlmsearch resume {study_dir}")
        raise
    finally:
        if view is not None:
            view.close()
    return study_dir


def _random_search(cfg: StudyConfig, study_dir: Path, arch: str, address: str | None) -> None:
    """The random-search companion of `arch` (`StudyConfig.random_config`), started or resumed."""
    search_cfg = cfg.random_config(arch, str(study_dir))
    if search_cfg is None:
        return  # the main search ran only baselines: random search has no trial of its own
    search_cfg = at_search_rate(search_cfg, study_dir / arch)  # the shared baselines are the same runs
    runner.search_or_resume(search_cfg, random_dir(study_dir, arch), address=address, progress=False)


def _verify(sub: Path, address: str | None, announce: Callable[[str], None] | None) -> dict[str, Any] | None:
    """Verify `sub` as its study says (`study_files.verify_options`: idempotent, finished verify
    records are reused) and return the verdict as a dict; `announce` receives the seed plan once
    the pilot has set it."""
    if not finished(read_records(sub)):
        return None  # every search trial failed: nothing to verify (the report says so)
    options = verify_options(sub)
    if options is None:
        raise RuntimeError(f"{sub} is not an architecture's folder of a study")
    result = verifying.verify(sub, **options, address=address, progress=False, announce=announce)
    return result.verdicts[0].to_dict() if result.verdicts else None


def _exact_profile(sub: Path, text: str) -> dict[str, Any]:
    """The full-precision ProfileSpec dict behind a verdict's label (labels print 6 digits)."""
    for r in read_records(sub):
        if r.profile and label(r) == text:
            return dict(r.profile)
    return ProfileSpec.parse(text).to_dict()


def _transfer(
    cfg: StudyConfig, study_dir: Path, arch: str, profiles: dict[str, dict[str, Any]], address: str | None
) -> int:
    """Train `profiles` (label -> ProfileSpec dict: the other architectures' best) and cosine on
    `arch`, seed-paired; only the (profile, seed) pairs without a finished record. Returns how
    many were trained."""
    if not profiles:
        return 0  # every other architecture's best is cosine itself: nothing to transfer
    specs = {COSINE: ProfileSpec.parse(COSINE)} | {t: ProfileSpec.from_dict(p) for t, p in sorted(profiles.items())}
    sub = transfer_dir(study_dir, arch)
    sub.mkdir(exist_ok=True)
    search_cfg = cfg.search_config(arch, str(study_dir)).replace(
        name=sub.name, scheduler="none", noise_seeds=0, baselines=tuple(specs), trials=len(specs) * cfg.transfer_seeds
    )
    search_cfg = at_search_rate(search_cfg, study_dir / arch)  # the rate `arch`'s calibration chose
    # the deciding length, as the verification's (`config.deciding_train`), in the arch's own steps
    search_cfg = resolve_trial_length(
        search_cfg.replace(train=deciding_train(search_cfg.train, cfg.verify_tokens_per_param))
    )
    search_cfg.save(sub / SEARCH_CONFIG)
    done = {(label(r), r.seed) for r in finished(read_records(sub), kinds=(TRANSFER_KIND,))}
    items = [
        FixedTrial(spec=spec, seed=s, name=text)
        for text, spec in specs.items()
        for s in transfer_seeds(cfg)
        if (text, s) not in done
    ]
    run_fixed(sub, search_cfg, items, TRANSFER_KIND, pack=search_cfg.pack, address=address)
    return len(items)
