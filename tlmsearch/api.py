"""The public entry points that span layers: a `Study` with its verbs, searches and comparisons.

`tlmsearch.rundir.Study` is plain data over a run directory; this `Study` adds what a user does
with one (re-evaluate, report, export), each a call of the layer that owns it. `search`,
`resume` and `load` return this `Study`; `compare` trains (`tlmsearch.tuning.compare`) and
then writes the report. Everything here sits above `tuning`, `report` and `export`, which
never import each other.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tlmsearch import rundir
from tlmsearch.analysis.summary import run_verdicts
from tlmsearch.analysis.verdict import Verdict, resolve_levels
from tlmsearch.configs.compare import CompareOptions
from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.study import StudyConfig
from tlmsearch.costs.deciding import Deciding, deciding
from tlmsearch.costs.price import LIMIT_HOURS
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.export.schedule import Export, export_run
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.ladders.cut import change_plan
from tlmsearch.ladders.report import write_ladder_report
from tlmsearch.report.run import write_report
from tlmsearch.rundir.io import read_json_object, read_verify
from tlmsearch.rundir.layout import created
from tlmsearch.rundir.records import EVAL_KINDS, read_records
from tlmsearch.studies.files import set_phase
from tlmsearch.studies.report import study_summary, write_study_report
from tlmsearch.tuning import interrupts, runner
from tlmsearch.tuning import study as study_runner
from tlmsearch.tuning.compare import CompareResult
from tlmsearch.tuning.compare import compare as train_and_compare
from tlmsearch.tuning.ladder import run_ladder, start_ladder
from tlmsearch.tuning.resume_resources import change_resources
from tlmsearch.tuning.train_run import train_on_workers
from tlmsearch.tuning.verify import VerifyResult
from tlmsearch.tuning.verify import verify as _verify


class Study(rundir.Study):
    """The trials of one run directory (`tlmsearch.load(run_dir)`), with its verbs.

    `records` holds every `TrialRecord` in the order trials ended; `trials` is the same as a
    pandas DataFrame (one row per record; metrics, shape statistics and sampled parameters
    flattened into columns). `best`, `pareto_front` and `baselines` consider the search's own
    trials (kinds baseline and sampled), and the first two only trials that reached full
    fidelity (all steps, status complete) — ASHA-stopped trials never count.
    """

    def verify(
        self, top_k: int = 5, seeds: int | str = "auto", steps: int | None = None, **kwargs: Any
    ) -> VerifyResult:
        """Re-train the top-k profiles and the baselines with planned (`"auto"`) or N seeds
        (`tlmsearch.tuning.verify.verify`); one priced beyond `max_hours` (default 12) of this
        machine is refused unless `yes=True`."""
        result = _verify(self, top_k, seeds, steps, **{"yes": False, **kwargs})
        self.records = read_records(self.run_dir)
        return result

    def verdicts(
        self,
        margin: float | None = None,
        alpha: float | None = None,
        *,
        method: str = "t",
        threshold: float | None = None,
        confidence: float | None = None,
    ) -> list[Verdict]:
        """The three-outcome verdicts from the run's verify (or compare) records, as `tlmsearch
        report` gives them: a planned verify decides on its fresh seeds only (never the pilot's),
        and gives no verdict while unfinished; empty before any verify.

        `margin` (old name `threshold`) and `alpha` (or `confidence` = 1 - alpha) as in `verdict`.
        """
        margin, alpha = resolve_levels(margin, alpha, threshold=threshold, confidence=confidence)
        plan = read_verify(self.run_dir)
        arch, space = self.config.arch, self.config.space
        return run_verdicts(self.records, plan, margin=margin, alpha=alpha, arch=arch, method=method, space=space)

    def deciding_plan(self, seeds: int | None = None, **hardware: Any) -> Deciding:
        """What re-running this run's verification with the seeds its verdict asks for (or
        `seeds`) would cost on GPUs: `tlmsearch.plan(study.deciding_plan(gpu="h200").config)`;
        `hardware` are the plan's gpu, mfu, gpus, gpus_per_trial and step_ms
        (`tlmsearch.costs.deciding`). One line when the run has no finished verification."""
        where = str(self.run_dir)
        vs = self.verdicts()
        runs = [r for r in self.records if r.kind in EVAL_KINDS and r.full_fidelity and r.model]
        if not vs or not runs:
            raise ConfigError(
                f"{where}: no finished verification (or comparison) to price: run `tlmsearch verify {where}` "
                "first, or price a study of your own with the shape flags"
            )
        last = runs[-1]
        if len(vs) > 1:  # a budget sweep: one verdict per budget, each its own price
            raise ConfigError(
                f"{where}: {len(vs)} verdicts, one per budget of a sweep; price one budget with the shape flags: "
                f"tlmsearch plan --preset {self.config.preset} --base-width W --trials 0 "
                f"--verify-profiles {vs[0].n_profiles} --seeds N --verify-steps {last.max_steps}"
            )
        models = [m for r in runs if (m := r.model_config) is not None]
        return deciding(
            where, vs[0], models, last.train, last.max_steps,
            preset_name=self.config.preset, base_width=last.base_width, seeds=seeds, **hardware,
        )  # fmt: skip

    def report(self, out_dir: str | Path | None = None, **kwargs: Any) -> dict[str, Path]:
        """Write report.html, summary.md, summary.json (`tlmsearch.report.run.write_report`)."""
        return write_report(self.run_dir, out_dir, **kwargs)

    def export(
        self, fmt: str = "native", trial: str = "best", out_dir: str | Path | None = None, **kwargs: Any
    ) -> Export:
        """Export a trial's widths (`tlmsearch.export.schedule.export_run`); returns the `Export`."""
        return export_run(self, trial, fmt, out_dir, **kwargs)[0]


def _with_verbs(study: rundir.Study) -> Study:
    return Study(study.run_dir, study.config, study.records)


_F = TypeVar("_F", bound=Callable[..., Any])


def _ends_cleanly_on_sigterm(fn: _F) -> _F:
    """A long call stopped by SIGTERM (a job scheduler's stop) ends the process with one line and
    exit status 143, as the command line does (`interrupts.stopped`); a Ctrl-C stays the caller's
    KeyboardInterrupt."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        interrupts.watch()  # SIGINT and SIGTERM honoured from the call's first instruction
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt as exc:
            made = created()
            interrupts.stopped(exc, f"; its run directory: {made[0]}" if made else "")
            raise

    return call  # type: ignore[return-value]


def _run_dir(run_dir: object, verb: str) -> str | Path:
    """`run_dir` when it is a path (str or Path), else one clear `UserError`."""
    if isinstance(run_dir, Path) or isinstance(run_dir, str) and run_dir.strip():
        return run_dir
    raise UserError(f"{verb}: run_dir={run_dir!r} must be the path of a run directory (a str or pathlib.Path)")


def load(run_dir: str | Path) -> Study:
    """Read a search run directory (its `search.yaml` and `trials.jsonl`)."""
    return _with_verbs(rundir.load(_run_dir(run_dir, "load")))


def train(
    model_cfg: Any,
    train_cfg: Any,
    data_cfg: Any,
    report: Callable[[int, dict[str, float]], None] | None = None,
    *,
    workers_per_trial: int = 1,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every_s: float = 0.0,
    stop: Callable[[], bool] | None = None,
    **kwargs: Any,
) -> Any:
    """Train one model: `tlmsearch.training.trainer.train` (its `TrainResult`; `progress` and
    `parallel` pass through). With `workers_per_trial` N > 1 the run trains on N data-parallel
    Ray Train workers on a local Ray (`tlmsearch.tuning.train_run`), to the numbers of one
    worker; `report` and `checkpoint_dir` then see each evaluation and its checkpoint (a
    checkpoint by wall time is kept with the next evaluation)."""
    if workers_per_trial == 1:
        from tlmsearch.training.trainer import train as train_one  # lazy: heavy (torch)

        return train_one(
            model_cfg, train_cfg, data_cfg, report,
            checkpoint_dir=checkpoint_dir, checkpoint_every_s=checkpoint_every_s, stop=stop, **kwargs,
        )  # fmt: skip
    if kwargs:
        raise ConfigError(
            f"train: {', '.join(sorted(kwargs))} with workers_per_trial={workers_per_trial!r}: several workers take "
            "report, checkpoint_dir, checkpoint_every_s and stop only"
        )
    return train_on_workers(
        model_cfg, train_cfg, data_cfg, report,
        workers=workers_per_trial, checkpoint_dir=checkpoint_dir, checkpoint_every_s=checkpoint_every_s, stop=stop,
    )  # fmt: skip


@_ends_cleanly_on_sigterm
def search(
    cfg: SearchConfig | Mapping[str, Any],
    *,
    address: str | None = None,
    progress: bool = True,
    yes: bool = False,
    max_hours: float = LIMIT_HOURS,
) -> Study:
    """Run the search `cfg` describes (locally, or on the Ray cluster at `address`).

    `cfg` is a `SearchConfig` or its fields as a dict (`SearchConfig.from_dict`, e.g.
    `{"preset": "tiny", "trials": 8}`). The search space's `sample` is called once on a
    throwaway trial first (`runner.search`): a space that fails is refused before anything starts.
    A search priced beyond `max_hours` of this machine (default 12; 0 = no limit) is refused
    with a `UserError` unless `yes=True` (nothing trains to price it: `tlmsearch.costs.price`).
    """
    if isinstance(cfg, Mapping):
        cfg = SearchConfig.from_dict(dict(cfg))
    if not isinstance(cfg, SearchConfig):
        raise UserError(
            f"search: cfg must be a SearchConfig or a dict of its fields, not {type(cfg).__name__} ({cfg!r:.80})"
        )
    return _with_verbs(runner.search(cfg, address=address, progress=progress, max_hours=None if yes else max_hours))


@_ends_cleanly_on_sigterm
def resume(
    run_dir: str | Path, *, address: str | None = None, progress: bool = True, **resources: float | None
) -> Study:
    """Continue an interrupted search in `run_dir` without re-running finished trials.

    `resources` (`cpus_per_trial`, `gpus_per_trial`, `workers_per_trial`, `max_concurrent`; None keeps the run's)
    change what each trial holds and how many run at once from here on, never what a trial
    trains (`tlmsearch.tuning.resume_resources`)."""
    _change_resources(_run_dir(run_dir, "resume"), resources, progress)
    return _with_verbs(runner.resume(run_dir, address=address, progress=progress))


def _change_resources(run_dir: str | Path, resources: Mapping[str, float | None], progress: bool) -> None:
    for line in change_resources(run_dir, **resources):
        if progress:
            print(line, flush=True)


@_ends_cleanly_on_sigterm
def compare(
    profiles: Sequence[str],
    options: CompareOptions | None = None,
    *,
    report: bool = True,
    yes: bool = False,
    max_hours: float = LIMIT_HOURS,
    **changes: Any,
) -> CompareResult:
    """Train every profile in `profiles` (ProfileSpec texts) with seeds seed..seed+seeds-1
    (`tlmsearch.tuning.compare.compare`), then, with `report`, write report.html, summary.md
    and summary.json into the new run directory.

    `options` is a `CompareOptions` (`storage`: where trial checkpoints go, a shared path or
    object-store URI; "" = the run directory); its fields may also be given as keywords (they win), e.g.
    `tlmsearch.compare(["uniform", "cosine"], arch="titans", preset="cpu-xs", seeds=3, steps=200)`.
    A compare priced beyond `max_hours` of this machine (default 12) is refused unless `yes=True`.
    """
    o = CompareOptions.of(options, **changes)
    margin, alpha = resolve_levels(o.margin, o.alpha, threshold=o.threshold, confidence=o.confidence)
    result = train_and_compare(profiles, o, yes=yes, max_hours=max_hours)
    if report and any(r.status == "complete" for r in result.records):
        write_report(result.run_dir, margin=margin, alpha=alpha, method=o.method)
    return result


@dataclass(frozen=True)
class StudyResult:
    """A finished (or resumed) cross-architecture study: its directory and its summary
    (what `summary.json` holds: verdicts, cross-architecture table, transfer matrix, answer)."""

    run_dir: Path
    summary: dict[str, Any]


@_ends_cleanly_on_sigterm
def study(
    cfg: StudyConfig | None = None,
    *,
    address: str | None = None,
    progress: bool = True,
    yes: bool = False,
    max_hours: float = LIMIT_HOURS,
    **fields: Any,
) -> StudyResult:
    """Run a cross-architecture study (`tlmsearch.tuning.study`): per architecture a search and
    a verification with planned seeds, then the transfer check and the study report.

    It is priced first (nothing trains: `tlmsearch.studies.cost.price_arch`) and refused with a
    `UserError` when the price passes `max_hours` of this machine (default 12; 0 = no limit)
    unless `yes=True`.

    `cfg` or its settings as flat keywords, the study's own and its searches' side by side (as the
    CLI's flags), e.g. `tlmsearch.study(archs=("transformer", "titans"), preset="cpu-s", trials=16)`;
    a search setting sets the `search` template's field (`StudyConfig.from_flat`). Interrupted
    studies continue with `resume_study`.
    """
    cfg = cfg.with_fields(**fields) if cfg is not None else StudyConfig.from_flat(fields)
    started = study_runner.start_study(cfg, address=address, progress=progress, yes=yes, max_hours=max_hours)
    return _finish_study(started, progress)


@_ends_cleanly_on_sigterm
def resume_study(
    run_dir: str | Path, *, address: str | None = None, progress: bool = True, **resources: float | None
) -> StudyResult:
    """Continue an interrupted study without training any finished trial again (`resources` as
    in `resume`: every phase's search takes them)."""
    _change_resources(run_dir, resources, progress)
    return _finish_study(study_runner.run_phases(run_dir, address=address, progress=progress), progress)


def _finish_study(run_dir: Path, progress: bool) -> StudyResult:
    """The study's last phase: its report (report.html, summary.json, summary.md)."""
    set_phase(run_dir, "report", "running")
    paths = write_study_report(run_dir)
    set_phase(run_dir, "report", "done")
    if progress:
        print(f"study: wrote {paths['html']}", flush=True)
    return StudyResult(run_dir, study_summary(run_dir))


@dataclass(frozen=True)
class LadderResult:
    """A finished (or resumed) ladder: its directory and its summary (summary.json: each point's
    verdict and gains, each profile's trend against training compute, the conclusion)."""

    run_dir: Path
    summary: dict[str, Any]


@_ends_cleanly_on_sigterm
def ladder(
    cfg: LadderConfig | None = None,
    *,
    address: str | None = None,
    progress: bool = True,
    yes: bool = False,
    max_hours: float = LIMIT_HOURS,
    **fields: Any,
) -> LadderResult:
    """Train the same profiles with paired seeds at several (size x tokens per parameter) points
    (`tlmsearch.tuning.ladder`), then write the ladder's report. `cfg` is a `LadderConfig`, or
    give its fields as keywords, e.g. `tlmsearch.ladder(points=("tiny@5", "cpu-xs@20"), seeds=4)`.
    A ladder priced beyond `max_hours` of this machine (default 12; 0 = no limit) is refused
    (`UserError`) before anything is written unless `yes=True`. Interrupted ladders continue
    with `resume_ladder`."""
    if cfg is not None and not isinstance(cfg, LadderConfig):
        raise UserError(f"ladder: cfg must be a LadderConfig or None (fields as keywords), not {type(cfg).__name__}")
    cfg = cfg.replace(**fields) if cfg is not None else LadderConfig.from_dict(fields)
    started = start_ladder(cfg, address=address, progress=progress, yes=yes, max_hours=max_hours)
    return _finish_ladder(started, progress)


@_ends_cleanly_on_sigterm
def resume_ladder(
    run_dir: str | Path,
    *,
    address: str | None = None,
    progress: bool = True,
    max_seeds: int | None = None,
    profiles: Sequence[str] | None = None,
    **resources: float | None,
) -> LadderResult:
    """Continue an interrupted ladder without training any finished run again (`resources`:
    `cpus_per_trial`, `gpus_per_trial`, `workers_per_trial`, as in `resume`). `max_seeds` and
    `profiles` (None = keep) change the plan of the points whose verification has not begun
    (`ladders.point_plan`): a ladder cut at its dear points; the begun ones keep theirs."""
    run_dir = _run_dir(run_dir, "resume_ladder")
    for line in change_plan(run_dir, max_seeds=max_seeds, profiles=profiles):
        if progress:
            print(line, flush=True)
    _change_resources(run_dir, resources, progress)
    return _finish_ladder(run_ladder(run_dir, address=address, progress=progress), progress)


def _finish_ladder(run_dir: Path, progress: bool) -> LadderResult:
    paths = write_ladder_report(run_dir)
    if progress:
        print(f"ladder: wrote {paths['html']}", flush=True)
    return LadderResult(run_dir, read_json_object(paths["json"]) or {})


__all__ = [
    "CompareOptions",
    "LadderResult",
    "Study",
    "StudyResult",
    "compare",
    "ladder",
    "load",
    "resume",
    "resume_ladder",
    "resume_study",
    "search",
    "study",
]
