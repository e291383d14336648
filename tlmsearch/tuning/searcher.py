"""The Optuna side of a search: samplers, the define-by-run space, baselines, fidelity.

`ProfileSearch` is Ray Tune's `OptunaSearch` with three changes:

- the baselines are the first trials: enqueued into the study (with their name as a user
  attribute) when the space can express them, otherwise run outside the study;
- every evaluation of a trial becomes an Optuna intermediate value keyed by its training
  step (not Ray's iteration count), including the evaluation that got the trial stopped:
  Ray hands a result to the searcher's `on_trial_result` only when the scheduler lets the
  trial go on, so the stopping (and the final) evaluation is reported from the trial's curve
  when it ends;
- a trial that ends before the full number of steps (stopped by the scheduler or the time
  budget) is told to Optuna as PRUNED, not COMPLETE with a partial value, so neither the
  samplers nor optuna-dashboard's Pareto front mistake it for a full-fidelity result. Optuna
  gives a PRUNED trial its last intermediate value as its value, and TPE ranks pruned trials
  by (deepest step, value at it): a trial stopped at step 100 with a good loss teaches TPE
  more than one stopped at step 50. Samplers that learn only from COMPLETE trials (GP,
  CMA-ES, NSGA-II) are refused with early stopping
  (`tlmsearch.search_config.check_sampler_scheduler`);
- a trial whose training raised (reported with `failed`) is told as FAIL; so is one whose
  space failed to sample (its `sample` raised or returned no profile mid-search): it trains
  `SPACE_FAILED`, which fails at once, and the recorder gives the space's error as its reason.

Optuna records intermediate values for single-objective studies only (`Trial.report`
refuses multi-objective ones), so in a multi-objective search a stopped trial is PRUNED
without them; its curve stays in its trial record.
"""

from __future__ import annotations

import logging
import sys
import warnings
from typing import TYPE_CHECKING, Any

from ray.tune.search.optuna import OptunaSearch

from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.resolve import budget_for, search_preset, sweep_levels, sweep_widths
from tlmsearch.rundir.layout import OPTUNA_LOG
from tlmsearch.rundir.records import SEARCH_KINDS, read_records
from tlmsearch.search_config import SearchConfig
from tlmsearch.spaces import SearchSpace, check_sample, load_space, sampled_text
from tlmsearch.tuning.location import run_dir

if TYPE_CHECKING:  # pragma: no cover
    import optuna

STUDY_NAME = "search"
# a trial whose define-by-run call failed (the space's `sample` raised or returned no profile)
# trains this text, which no trainable accepts, so it fails at once; SPACE_ERROR in its config
# says why, and the recorder records that reason
SPACE_FAILED = "<search space failed>"
SPACE_ERROR = "space_error"
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

    def __init__(self, space: str, n_layers: int, sweep: tuple[int, int, int] | None) -> None:
        self.space_source, self.n_layers, self.sweep = space, n_layers, sweep
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
            out["profile"] = sampled_text(self.space, trial, self.n_layers)
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


def check_space_samples(cfg: SearchConfig) -> None:
    """Before a search starts (before Ray, before its run directory): load `cfg.space` and call
    its `sample` once per budget on a throwaway trial (`spaces.check_sample`), so a space that
    raises or returns something no trial can train is refused in one line naming the file."""
    budgets = [budget_for(cfg, width) for width in sweep_levels(cfg) or (None,)]
    if len(budgets) > 2:  # a sweep: its narrowest and widest budgets
        budgets = [budgets[0], budgets[-1]]
    check_sample(load_space(cfg.space), budgets, seed=cfg.seed)


class ProfileSearch(OptunaSearch):
    """`OptunaSearch` that seeds baselines and tells partial trials as PRUNED (see module doc)."""

    def __init__(
        self,
        define: DefineProfile,
        *,
        cfg: SearchConfig,
        storage: optuna.storages.BaseStorage | None,
        baselines: list[tuple[str, dict[str, Any] | None, dict[str, Any]]],
        sampler_seed: int | None = None,
    ) -> None:
        metric: str | list[str] = list(cfg.objectives) if cfg.multi_objective else cfg.objectives[0]
        mode: str | list[str] = cfg.modes if cfg.multi_objective else cfg.modes[0]
        super().__init__(
            space=define,
            metric=metric,
            mode=mode,
            sampler=make_sampler(cfg, sampler_seed),
            study_name=STUDY_NAME,
            storage=storage,
        )  # the seed goes to the sampler
        self._max_steps = cfg.train.steps
        # (name, Optuna params or None when the space cannot express it, Tune config)
        self._pending = list(baselines)
        self._outside: dict[str, dict[str, Any]] = {}  # trial id -> config of baselines run outside the study

    @property
    def study(self) -> optuna.Study:
        self._attach()
        assert self._ot_study is not None
        return self._ot_study

    # Pickled (in Tune's tuner.pkl and searcher-state) without the journal: its path is the run
    # directory's, which may have been copied or moved since; it is reopened where the run
    # directory now lies (`location.run_dir()`) on first use after unpickling.
    def __getstate__(self) -> dict[str, Any]:
        # Optuna's Trial objects hold the study (and so the journal's path): keep their ids
        ids = {tid: t._trial_id for tid, t in self._ot_trials.items()}
        return {**self.__dict__, "_storage": None, "_ot_study": None, "_ot_trials": {}, "_ot_trial_ids": ids}

    def save(self, checkpoint_path: str) -> None:
        import pickle

        with open(checkpoint_path, "wb") as f:
            pickle.dump(self.__getstate__(), f)

    def restore(self, checkpoint_path: str) -> None:
        super().restore(checkpoint_path)
        if self._ot_trials:  # a state saved before states left the journal out: keep only ids
            ids = {tid: t._trial_id for tid, t in self._ot_trials.items()}
            self._ot_trials, self._ot_trial_ids = {}, ids
        self._ot_study = None
        self._attach()
        self._drop_recorded_baselines()

    def _drop_recorded_baselines(self) -> None:
        """Forget the pending baselines `trials.jsonl` already holds: Tune's snapshot of this
        searcher can predate their trials (the driver was killed after they ran)."""
        done = {
            (r.baseline, r.params.get("base_width"))
            for r in read_records(run_dir())
            if r.kind in SEARCH_KINDS and r.baseline
        }
        self._pending = [b for b in self._pending if (b[0], b[2].get("base_width")) not in done]

    def _attach(self) -> None:
        if self._ot_study is not None:
            return
        import optuna

        self._storage = open_storage(str(run_dir()))
        study = optuna.load_study(study_name=STUDY_NAME, storage=self._storage, sampler=self._sampler)
        self._ot_study = study  # type: ignore[assignment]  # Ray annotates it as None
        ids = self.__dict__.pop("_ot_trial_ids", {})
        self._ot_trials.update({tid: optuna.trial.Trial(study, i) for tid, i in ids.items()})

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        self._attach()
        if trial_id in self._outside:
            return dict(self._outside[trial_id])
        if self._pending and trial_id not in self._ot_trials:
            name, point, config = self._pending.pop(0)
            if point is None:
                self._outside[trial_id] = config
                return dict(config)
            if not self._waiting(name, point):
                self.study.enqueue_trial(point, user_attrs={"baseline": name}, skip_if_exists=False)
        return super().suggest(trial_id)

    def _waiting(self, name: str, point: dict[str, Any]) -> bool:
        """Whether the study already holds this baseline as a WAITING trial: enqueued by a
        driver killed before it asked for the trial; the next `ask` takes that one."""
        import optuna

        waiting = self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,))
        return any(
            t.user_attrs.get("baseline") == name and t.system_attrs.get("fixed_params") == point for t in waiting
        )

    def _known(self, trial_id: str, result: dict[str, Any] | None) -> bool:
        """Whether `trial_id` is a trial of the study that is still open in it.

        A trial missing from this searcher's saved state (its snapshot predates the trial) is
        found again by the Optuna number in its config; one that Optuna already holds as
        finished (told before the driver was killed, then resumed by Tune) is not told again.
        """
        if trial_id in self._outside or trial_id in self._completed_trials:
            return False
        if trial_id not in self._ot_trials:
            number = (result or {}).get("config/number")
            if number is None:
                return False
            import optuna

            storage = self.study._storage
            try:
                tid = storage.get_trial_id_from_study_id_trial_number(self.study._study_id, int(number))
            except KeyError:
                return False
            self._ot_trials[trial_id] = optuna.trial.Trial(self.study, tid)
        return not self.study._storage.get_trial(self._ot_trials[trial_id]._trial_id).state.is_finished()

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        self._attach()
        if self._known(trial_id, result):
            self._report(trial_id, result)

    def _report(self, trial_id: str, result: dict[str, Any]) -> None:
        """Every evaluation in the trial's curve (and the result itself) as an intermediate
        value at its training step; steps already reported are skipped."""
        if self.multi_objective or result.get("failed"):
            return
        metric = str(self.metric)
        points = [(c.get("step"), c.get(metric)) for c in result.get("curve") or []]
        points.append((result.get("step"), result.get(metric)))
        trial = self._ot_trials[trial_id]
        with warnings.catch_warnings():  # a resumed trial re-reports steps Optuna already has
            warnings.filterwarnings("ignore", message=".*is already reported")
            for step, value in points:
                if step is not None and value is not None:
                    trial.report(float(value), int(step))

    @property
    def multi_objective(self) -> bool:
        return isinstance(self.metric, list)

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        self._attach()
        if not self._known(trial_id, result):
            return  # not a study trial, or one already told before a kill
        if result:
            self._report(trial_id, result)  # the evaluation that stopped (or ended) it
        if result and result.get("failed"):
            result, error = None, True
        elif result and int(result.get("step", 0)) < self._max_steps:
            result = None  # partial fidelity: PRUNED
        super().on_trial_complete(trial_id, result, error)


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
