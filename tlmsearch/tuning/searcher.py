"""The Optuna side of a search: samplers, the define-by-run space, baselines, resume.

`ProfileSearch` is Ray Tune's `Searcher` over Optuna's ask-and-tell interface. The baselines
are its first trials (enqueued with their name as a user attribute when the space can express
them, else run outside the study). Every evaluation is an intermediate value at its training
step. A trial that ends before full fidelity is told PRUNED, never COMPLETE with a partial
value (TPE ranks pruned trials by deepest step, then value; samplers that learn from COMPLETE
trials only are refused with early stopping: `configs.search.check_sampler_scheduler`); a
trial whose training or sampling failed is told FAIL (a failed sample trains `SPACE_FAILED`).
Each trial's Tune config carries its resolved `TrialSpec` and the Optuna params it was asked.
A resume re-tells the study from `trials.jsonl` alone (`Past`): the journal is written anew,
and the trials a stopped driver left unfinished resume first, from their checkpoints, under
their numbers. Optuna keeps intermediate values of single-objective studies only.
"""

from __future__ import annotations

import logging
import math
import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ray.tune.search import Searcher

from tlmsearch.configs.resolve import budget_for, search_preset, sweep_levels, sweep_widths
from tlmsearch.configs.search import OBJECTIVE_METRICS, SearchConfig
from tlmsearch.configs.trial import OUTCOME, RESTORE, SPACE_ERROR, sampled_params
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.profiles.spaces import SearchSpace, check_sample, load_space, sampled_text
from tlmsearch.rundir.layout import OPTUNA_LOG
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.tuning.checkpoints import Interrupted
from tlmsearch.tuning.specs import with_spec

if TYPE_CHECKING:  # pragma: no cover
    import optuna

STUDY_NAME = "search"
# a trial whose define-by-run call failed (the space's `sample` raised or returned no profile)
# trains this text, which no trainable accepts, so it fails at once; SPACE_ERROR in its config
# says why, and the recorder records that reason
SPACE_FAILED = "<search space failed>"
# an Optuna trial asked by a driver that stopped before the trial ended and left no checkpoint
INTERRUPTED = "interrupted: its driver stopped before the trial ended; the search ran another trial in its place"
logger = logging.getLogger(__name__)


def make_sampler(cfg: SearchConfig, seed: int | None = None) -> optuna.samplers.BaseSampler:
    """The Optuna sampler named by `cfg.sampler`, seeded with `seed` (default `cfg.seed`)."""
    import optuna

    s, seed = cfg.sampler, cfg.seed if seed is None else seed
    if s == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if s == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    if s == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=max(4, min(50, cfg.trials // 4)))
    if s == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    if s == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if s == "qmc":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.QMCSampler(seed=seed, scramble=True, warn_independent_sampling=False)
    raise AssertionError(s)  # SearchConfig validated it


def open_storage(run_dir: str) -> optuna.storages.BaseStorage:
    """The study's journal file in the run directory (`optuna-dashboard <run>/optuna.log`)."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return JournalStorage(JournalFileBackend(f"{run_dir}/{OPTUNA_LOG}"))


class DefineProfile:
    """The define-by-run function: asks the space for a profile (and a base width in sweeps).

    Picklable (Ray saves the searcher): the space is loaded again from its name or path.
    """

    def __init__(self, space: str, n_layers: int, sweep: tuple[int, int, int] | None, arch: str | None = None) -> None:
        self.space_source, self.n_layers, self.sweep, self.arch = space, n_layers, sweep, arch
        self._space: SearchSpace | None = None

    @property
    def space(self) -> SearchSpace:
        if self._space is None:
            self._space = load_space(self.space_source)
        return self._space

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_space": None}

    def __call__(self, trial: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.sweep:
            lo, hi, step = self.sweep
            out["base_width"] = trial.suggest_int("base_width", lo, hi, step=step)
        baseline = trial.user_attrs.get("baseline")
        try:
            out["profile"] = sampled_text(self.space, trial, self.n_layers, arch=self.arch)
        except ConfigError as exc:  # the space failed (or vanished) mid-search: this trial fails, the search goes on
            if not baseline:
                out["profile"], out[SPACE_ERROR] = SPACE_FAILED, str(exc)
                print(
                    f"tlmsearch: warning: trial {trial.number}: {exc}; it is recorded as failed and the search goes on",
                    file=sys.stderr,
                    flush=True,
                )
        if baseline:  # train the baseline itself, not the space's (maybe rounded) encoding of it
            out["profile"] = out["baseline"] = baseline
        out["number"] = trial.number
        return out

    def replay(self, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The params a trial was asked and their distributions, found by asking the space
        again with exactly those values (None when they no longer make a profile)."""
        import optuna

        trial = optuna.trial.FixedTrial(params)
        try:
            if self.sweep:
                lo, hi, step = self.sweep
                trial.suggest_int("base_width", lo, hi, step=step)
            sampled_text(self.space, trial, self.n_layers, arch=self.arch)
        except (ConfigError, ValueError):
            return None
        return trial.params, trial.distributions


def check_space_samples(cfg: SearchConfig) -> None:
    """Before a search starts (before Ray, before its run directory): load `cfg.space` and call
    its `sample` once per budget on a throwaway trial (`spaces.check_sample`), so a space that
    raises or returns something no trial can train is refused in one line naming the file."""
    budgets = [budget_for(cfg, width) for width in sweep_levels(cfg) or (None,)]
    if len(budgets) > 2:  # a sweep: its narrowest and widest budgets
        budgets = [budgets[0], budgets[-1]]
    check_sample(load_space(cfg.space), budgets, seed=cfg.seed, arch=cfg.arch)


@dataclass(frozen=True)
class Past:
    """What a resumed search starts from: its recorded search trials (`trials.jsonl`) and the
    trials a stopped driver left unfinished with a checkpoint (`checkpoints.interrupted_trials`)."""

    records: tuple[TrialRecord, ...] = ()
    interrupted: tuple[Interrupted, ...] = ()


class ProfileSearch(Searcher):
    """Optuna's ask-and-tell behind Tune's `Searcher` interface, rebuilt from the records on a
    resume (see module doc). `storage` None keeps the study in memory."""

    def __init__(
        self,
        define: DefineProfile,
        *,
        cfg: SearchConfig,
        storage: optuna.storages.BaseStorage | None,
        baselines: list[tuple[str, dict[str, Any] | None, dict[str, Any]]],
        past: Past = Past(),
    ) -> None:
        super().__init__()  # no metric or mode for Tune: the study's directions hold them
        self.define, self.cfg, self.storage, self.past = define, cfg, storage, past
        self.objectives = list(cfg.objectives) if cfg.multi_objective else [cfg.objectives[0]]
        # (name, Optuna params or None when the space cannot express it, Tune config)
        self.pending = list(baselines)
        self.outside: dict[str, dict[str, Any]] = {}  # trial id -> config of trials run outside the study
        self.trials: dict[str, optuna.trial.Trial] = {}  # trial id -> its Optuna trial
        self.told: set[str] = set()
        self.resumed: list[tuple[Interrupted, optuna.trial.Trial | None]] = []  # run first, in order
        self._study: optuna.Study | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its searcher into tuner.pkl for `Tuner.restore`, which tlmsearch never
        # calls (a resume rebuilds from trials.jsonl): the live study and its journal stay out
        return {**self.__dict__, "storage": None, "_study": None, "trials": {}, "resumed": []}

    def save(self, checkpoint_path: str) -> None:
        """Nothing to save: a resume rebuilds the searcher from `trials.jsonl` (`Past`)."""

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec: Any) -> bool:
        return True  # the space is the define-by-run function; the objectives are the study's

    @property
    def study(self) -> optuna.Study:
        if self._study is None:
            self._study = self._open()
        return self._study

    def _open(self) -> optuna.Study:
        """The study, re-told from `past`: trial number n is its record (as the running search
        told it), the interrupted trial that resumes (RUNNING until it ends again), or a FAIL
        naming the interruption; the sampler is seeded with the search seed plus that count,
        so a resumed search samples deterministically from its records and never replays the
        first session's draws."""
        import optuna

        told = {r.number: r for r in self.past.records if r.number >= 0}
        waiting = {int(i.config["number"]): i for i in self.past.interrupted if int(i.config.get("number", -1)) >= 0}
        count = max([*told, *waiting], default=-1) + 1
        study = optuna.create_study(
            study_name=STUDY_NAME,
            storage=self.storage,
            sampler=make_sampler(self.cfg, self.cfg.seed + count),
            directions=["minimize" if m == "min" else "maximize" for m in self.cfg.modes[: len(self.objectives)]],
        )
        for number in range(count):
            if number in told:
                study.add_trial(self._frozen(told[number]))
            elif number in waiting:
                config = waiting[number].config
                baseline = {"baseline": config["baseline"]} if config.get("baseline") else {}
                study.enqueue_trial(sampled_params(config), user_attrs=baseline)
                trial = study.ask()
                self.define(trial)  # the trial's params and their distributions, as when it was sampled
                self.resumed.append((waiting[number], trial))
            else:
                failed = optuna.trial.TrialState.FAIL
                study.add_trial(optuna.trial.create_trial(state=failed, user_attrs={"fail_reason": INTERRUPTED}))
        self.resumed += [(i, None) for i in self.past.interrupted if int(i.config.get("number", -1)) < 0]
        return study

    def _frozen(self, record: TrialRecord) -> optuna.trial.FrozenTrial:
        """A recorded trial as the running search told it: COMPLETE with its objectives at full
        fidelity, PRUNED (with its last evaluation as its value) when stopped, else FAIL."""
        from optuna.trial import TrialState, create_trial

        attrs = {"baseline": record.baseline} if record.baseline else {}
        replayed = self.define.replay(record.params)
        values = [record.metric(OBJECTIVE_METRICS.get(o, o)) for o in self.objectives]
        if record.status == "failed" or replayed is None:
            return create_trial(state=TrialState.FAIL, user_attrs=attrs)
        params, distributions = replayed
        steps = {} if len(self.objectives) > 1 else {int(c["step"]): c.get(self.objectives[0]) for c in record.curve}
        curve = {s: float(v) for s, v in steps.items() if v is not None}
        frozen: dict[str, Any] = {
            "params": params,
            "distributions": distributions,
            "user_attrs": attrs,
            "intermediate_values": curve,
        }
        if record.status == "complete" and record.full_fidelity and all(math.isfinite(v) for v in values):
            return create_trial(state=TrialState.COMPLETE, values=values, **frozen)
        return create_trial(state=TrialState.PRUNED, value=curve[max(curve)] if curve else None, **frozen)

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        study = self.study
        if trial_id in self.outside:
            return dict(self.outside[trial_id])
        if self.resumed:
            interrupted, trial = self.resumed.pop(0)
            config = with_spec(self.cfg, {**interrupted.config, RESTORE: interrupted.checkpoint})
            if trial is None:
                self.outside[trial_id] = config
            else:
                self.trials[trial_id] = trial
            return config
        if self.pending:
            name, point, config = self.pending.pop(0)
            if point is None:
                self.outside[trial_id] = with_spec(self.cfg, config)
                return dict(self.outside[trial_id])
            study.enqueue_trial(point, user_attrs={"baseline": name}, skip_if_exists=False)
        trial = study.ask()
        self.trials[trial_id] = trial
        config = self.define(trial)  # asks Optuna first: then `trial.params` holds what it asked
        return with_spec(self.cfg, {**trial.params, **config})

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        if trial_id in self.trials and trial_id not in self.told:
            self._report(self.trials[trial_id], result)

    def _report(self, trial: optuna.trial.Trial, result: dict[str, Any]) -> None:
        """Every evaluation in the trial's curve (and the result itself) as an intermediate value
        at its training step, steps already reported skipped: Ray hands the searcher only results
        the scheduler let go on, so the one that stopped a trial arrives with its end."""
        if len(self.objectives) > 1 or result.get("failed"):
            return
        metric = self.objectives[0]
        # Tune flattens nested results for searchers ("outcome/curve"); a direct call passes them nested
        curve = result.get(f"{OUTCOME}/curve") or (result.get(OUTCOME) or {}).get("curve") or []
        points = [(c.get("step"), c.get(metric)) for c in curve]
        points.append((result.get("step"), result.get(metric)))
        with warnings.catch_warnings():  # a resumed trial re-reports steps Optuna already has
            warnings.filterwarnings("ignore", message=".*is already reported")
            for step, value in points:
                if step is not None and value is not None:
                    trial.report(float(value), int(step))

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        from optuna.trial import TrialState

        trial = self.trials.get(trial_id)
        if trial is None or trial_id in self.told:
            return  # not a study trial, or told already
        self.told.add(trial_id)
        if result:
            self._report(trial, result)  # the evaluation that stopped (or ended) it
        values = [(result or {}).get(o) for o in self.objectives]
        if error or not result or result.get("failed"):
            state, told = TrialState.FAIL, None
        elif int(result.get("step", 0)) < self.cfg.train.steps or None in values:
            state, told = TrialState.PRUNED, None  # partial fidelity
        else:
            state, told = TrialState.COMPLETE, [float(v) for v in values if v is not None]
        try:
            self.study.tell(trial, told, state=state)
        except (RuntimeError, ValueError) as exc:  # e.g. a NaN value
            logger.warning("trial %s: %s", trial.number, exc)


def mark_pruned(run_dir: str, numbers: list[int]) -> None:
    """Tell the study in `run_dir` that these still-running trials were cut short."""
    import optuna

    study = optuna.load_study(study_name=STUDY_NAME, storage=open_storage(run_dir))
    for n in numbers:
        try:
            study.tell(n, state=optuna.trial.TrialState.PRUNED)
        except (RuntimeError, ValueError) as exc:  # already finished
            logger.debug("trial %s: %s", n, exc)


def baseline_points(
    cfg: SearchConfig, define: DefineProfile
) -> list[tuple[str, dict[str, Any] | None, dict[str, Any]]]:
    """For each baseline (at each budget of a sweep): its name, the Optuna params that
    reproduce it (or None) and its Tune config."""
    n_layers = search_preset(cfg).n_layers
    out = []
    for width in sweep_levels(cfg) or (None,):
        for text in cfg.baselines:
            spec = ProfileSpec.parse(text)
            name = str(spec)
            config: dict[str, Any] = {"profile": name, "baseline": name}
            point = define.space.encode(spec, n_layers)
            if width is not None:
                config["base_width"] = width
                if point is not None:
                    point = {"base_width": width, **point}
            out.append((name, point, config))
    return out


def sweep_of(cfg: SearchConfig) -> tuple[int, int, int] | None:
    return sweep_widths(cfg) if cfg.base_widths else None
