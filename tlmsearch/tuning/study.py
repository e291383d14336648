"""A cross-architecture study: for each architecture a search, then a verification with planned
seeds (the three-outcome verdict), then a transfer check, in one resumable run directory (the report
is written by `tlmsearch.api` once these phases are done).

    runs/<study>/
      study.yaml            the resolved StudyConfig
      study_state.json      each phase's status (pending / running / done), written atomically
      <arch>/               one search run directory per architecture (search + verify records)
      transfer-<arch>/      the other architectures' best profiles and cosine re-trained on <arch>
      report.html, summary.json, summary.md   the study report (`tlmsearch.study_report`)

It is an orchestration layer over the public `runner.search` / `runner.resume`, `verify` and
`run_fixed`: every phase is idempotent because those reuse finished records (a search resumes
from Ray's state and its `trials.jsonl`; `verify` reuses finished verify records; the transfer
trains only the (profile, seed) pairs that have no finished record), so `resume_study` after a
kill anywhere re-runs the phase that was running and trains nothing twice. The state file only
says where the study is (for `status` and for choosing resume over a fresh search).

Not built yet: the noise-floor phase of the verdict design (uniform with a few seeds at trial
fidelity before each search). Its place is `_phases` ("noise" before "search"); nothing reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tlmsearch.analysis.collect import label
from tlmsearch.analysis.crossarch import COSINE, best_profiles
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.io import write_json
from tlmsearch.rundir.layout import SEARCH_CONFIG, create_run_dir
from tlmsearch.rundir.records import finished, read_records
from tlmsearch.study_config import StudyConfig
from tlmsearch.study_cost import estimate, trials_per_arch
from tlmsearch.study_files import (
    STUDY_CONFIG,
    STUDY_STATE,
    TRANSFER_KIND,
    load_config,
    read_state,
    set_phase,
    transfer_dir,
    transfer_seeds,
)
from tlmsearch.tuning.announce import search_and_verify

PHASES = ("search", "verify")  # per architecture; then "transfer/<arch>" per target and "report"


def _phases(cfg: StudyConfig) -> list[str]:
    """Every phase key in order ("<arch>/search", "<arch>/verify", "transfer/<arch>", "report")."""
    keys = [f"{a}/{p}" for a in cfg.archs for p in PHASES]
    return keys + [f"transfer/{a}" for a in cfg.archs] + ["report"]


def start_study(cfg: StudyConfig, *, address: str | None = None, progress: bool = True) -> Path:
    """Create the study directory, print the cost estimate, and run every training phase."""
    study_dir = create_run_dir(cfg.runs_dir, cfg.name or None, prefix="study").resolve()
    cfg = cfg.replace(name=study_dir.name)
    cfg.save(study_dir / STUDY_CONFIG)
    write_json(study_dir / STUDY_STATE, {"phases": {k: {"status": "pending"} for k in _phases(cfg)}})
    if progress:
        fewest, most = trials_per_arch(cfg)
        extra = (fewest - cfg.trials, most - cfg.trials)  # verification and transfer runs
        times = {a: search_and_verify(cfg.search_config(a), extra) for a in cfg.archs}
        print(estimate(cfg, study_dir, times).text(), flush=True)
    return run_phases(study_dir, address=address, progress=progress)


def run_phases(study_dir: str | Path, *, address: str | None = None, progress: bool = True) -> Path:
    """Run every training phase that is not done; finished trials are never trained again. The
    "report" phase is the caller's (`tlmsearch.api`): training never writes reports."""
    study_dir = Path(study_dir).resolve()
    cfg = load_config(study_dir)
    state = read_state(study_dir)["phases"]

    def done(key: str) -> bool:
        return state.get(key, {}).get("status") == "done"

    own: dict[str, dict[str, Any]] = {}
    for arch in cfg.archs:
        sub = study_dir / arch
        if not done(f"{arch}/search"):
            set_phase(study_dir, f"{arch}/search", "running")
            _search(cfg, study_dir, arch, address, progress)
            set_phase(study_dir, f"{arch}/search", "done")
        key = f"{arch}/verify"
        if not done(key):
            set_phase(study_dir, key, "running")
        result = _verify(cfg, sub, address, progress)
        if result is not None:
            own[arch] = result
        set_phase(study_dir, key, "done", outcome=own.get(arch, {}).get("outcome"))
    best = best_profiles(own)
    exact = {p: _exact_profile(study_dir / src, p) for src, p in best.items()}
    for arch in cfg.archs:
        key = f"transfer/{arch}"
        if not done(key):
            set_phase(study_dir, key, "running")
        profiles = {p: exact[p] for src, p in best.items() if src != arch and p != COSINE}
        n = _transfer(cfg, study_dir, arch, profiles, address, progress)
        set_phase(study_dir, key, "done", profiles=sorted(profiles), trained_by_last_run=n)
    return study_dir


def _search(cfg: StudyConfig, study_dir: Path, arch: str, address: str | None, progress: bool) -> None:
    from tlmsearch.tuning import runner

    sub = study_dir / arch
    if (sub / SEARCH_CONFIG).is_file():  # started before a kill: continue it
        runner.resume(sub, address=address, progress=progress)
    else:
        runner.search(cfg.search_config(arch, str(study_dir)), address=address, progress=progress)


def _verify(cfg: StudyConfig, sub: Path, address: str | None, progress: bool) -> dict[str, Any] | None:
    """Verify (idempotent: finished verify records are reused) and return the verdict as a dict."""
    from tlmsearch.tuning.verify import verify

    if not finished(read_records(sub)):
        return None  # every search trial failed: nothing to verify (the report says so)
    result = verify(
        sub,
        top_k=cfg.top_k,
        seeds=cfg.verify_seeds,
        max_seeds=cfg.max_seeds,
        pilot_seeds=cfg.pilot_seeds,
        margin=cfg.margin,
        alpha=cfg.alpha,
        address=address,
        progress=progress,
        controls=cfg.controls,
    )
    return result.verdicts[0].to_dict() if result.verdicts else None


def _exact_profile(sub: Path, text: str) -> dict[str, Any]:
    """The full-precision ProfileSpec dict behind a verdict's label (labels print 6 digits)."""
    for r in read_records(sub):
        if r.profile and label(r) == text:
            return dict(r.profile)
    return ProfileSpec.parse(text).to_dict()


def _transfer(
    cfg: StudyConfig,
    study_dir: Path,
    arch: str,
    profiles: dict[str, dict[str, Any]],
    address: str | None,
    progress: bool,
) -> int:
    """Train `profiles` (label -> ProfileSpec dict: the other architectures' best) and cosine on
    `arch`, seed-paired; only the (profile, seed) pairs without a finished record. Returns how
    many were trained."""
    from tlmsearch.tuning.fixed import FixedTrial, run_fixed

    if not profiles:
        return 0  # every other architecture's best is cosine itself: nothing to transfer
    specs = {COSINE: ProfileSpec.parse(COSINE)} | {t: ProfileSpec.from_dict(p) for t, p in sorted(profiles.items())}
    sub = transfer_dir(study_dir, arch)
    sub.mkdir(exist_ok=True)
    search_cfg = cfg.search_config(arch, str(study_dir)).replace(
        name=sub.name, scheduler="none", baselines=tuple(specs), trials=len(specs) * cfg.transfer_seeds
    )
    search_cfg.save(sub / SEARCH_CONFIG)
    done = {(label(r), r.seed) for r in finished(read_records(sub), kinds=(TRANSFER_KIND,))}
    items = [
        FixedTrial(spec=spec, seed=s, name=text)
        for text, spec in specs.items()
        for s in transfer_seeds(cfg)
        if (text, s) not in done
    ]
    run_fixed(sub, search_cfg, items, kind=TRANSFER_KIND, address=address, progress=progress)
    return len(items)
