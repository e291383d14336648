"""Early stopping that never stops a baseline, with reproducible HyperBand brackets.

The baselines (uniform, cosine, ...) are the references every profile is judged against, so
they always train to full fidelity; their results still fill ASHA's rungs, so they also set
the bar the sampled trials must clear. Imported only when a search runs (it imports Ray).

Asynchronous HyperBand (`brackets` > 1) puts each new trial into a bracket at random, with
Ray's probabilities (a softmax of the brackets' rung counts). Ray draws from NumPy's global
random state, which nothing seeds, so two runs of one search could stop different trials.
Here the draw comes from a generator seeded by the search seed and the trial's own config
(its Optuna trial number, or its baseline name), so the same search gives the same brackets,
whatever order the trials arrive in, and a resumed search gives a re-added trial the bracket
it had. Brackets whose first rung would lie at or beyond `max_t` (where every trial stops
anyway) are not created: they would only be trials without early stopping, drawn by chance.

In a budget sweep a trial's validation loss depends on its parameter budget as much as on its
profile, so one set of rungs for all budgets would rank budgets, not profiles: measured, it
let 3-6 % of the trials at the smallest budgets reach full fidelity against 80 % at the
largest. Each budget (the trial's `base_width`) therefore has rungs of its own: a trial is
compared only with trials (and baselines) of its own budget.

Tune saves neither the scheduler nor its rungs, so a resumed search primes them from the
recorded trials' curves (`BaselineKeepingASHA.prime`) and stops what an uninterrupted one would.
"""

from __future__ import annotations

import copy
import json
import zlib
from collections.abc import Iterable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
from ray.tune.schedulers import AsyncHyperBandScheduler, TrialScheduler

from tlmsearch.rundir.records import SEARCH_KINDS

if TYPE_CHECKING:
    from tlmsearch.rundir.records import TrialRecord


def brackets_with_rungs(max_t: int, grace: int, reduction_factor: float) -> int:
    """How many asynchronous HyperBand brackets have a rung before `max_t` (at least 1).

    Bracket s has its first rung at `grace * reduction_factor**s`, so with 300 steps, a grace
    of 50 and a reduction factor of 3 there are two (rungs 50 and 150; 150), not three.
    """
    if grace <= 0 or max_t <= 0 or reduction_factor <= 1:
        raise ValueError(
            f"need grace > 0, max_t > 0 and reduction_factor > 1; got {grace}, {max_t}, {reduction_factor}"
        )
    count, first_rung = 0, float(grace)
    while first_rung < max_t:
        count += 1
        first_rung *= reduction_factor
    return max(1, count)


def bracket_key(config: dict[str, Any]) -> int:
    """A stable integer for a trial's config: Optuna trial number, baseline name, profile."""
    text = json.dumps({k: config.get(k) for k in ("number", "baseline", "profile", "base_width", "seed")}, default=str)
    return zlib.crc32(text.encode())


class BaselineKeepingASHA(AsyncHyperBandScheduler):
    """`AsyncHyperBandScheduler` that never stops a trial with a `baseline` config, draws
    brackets from a seeded generator, and has no bracket without a rung (see module doc).

    `brackets` is an upper bound: it is lowered to `brackets_with_rungs(max_t, grace_period,
    reduction_factor)`. A search passes its seed as `seed`.
    """

    def __init__(
        self,
        *,
        time_attr: str,
        metric: str,
        mode: str,
        max_t: int,
        grace_period: int,
        reduction_factor: float,
        brackets: int = 1,
        seed: int = 0,
    ) -> None:
        self.requested_brackets = brackets
        brackets = min(brackets, brackets_with_rungs(max_t, grace_period, reduction_factor))
        super().__init__(
            time_attr=time_attr,
            metric=metric,
            mode=mode,
            max_t=max_t,
            grace_period=grace_period,
            reduction_factor=reduction_factor,
            brackets=brackets,
        )
        self.seed = seed
        self._pristine = copy.deepcopy(self._brackets)  # empty rungs, copied for each new budget
        self._by_budget: dict[int, list[Any]] = {}  # base_width -> that budget's brackets

    @property
    def n_brackets(self) -> int:
        return len(self._brackets)

    def bracket_probabilities(self) -> list[float]:
        """Ray's choice probabilities: a softmax of each bracket's number of rungs."""
        sizes = np.array([len(b._rungs) for b in self._brackets], dtype=float)
        weights = np.exp(sizes - sizes.max())
        return list(weights / weights.sum())

    def bracket_index(self, config: dict[str, Any]) -> int:
        """The bracket of a trial with this config: a function of the seed and the config only."""
        if len(self._brackets) == 1:
            return 0
        rng = np.random.default_rng([self.seed, bracket_key(config)])
        return int(rng.choice(len(self._brackets), p=self.bracket_probabilities()))

    def brackets_for(self, config: dict[str, Any]) -> list[Any]:
        """The brackets of the trial's budget: its own per `base_width`; the shared ones
        when the search has a single budget (no `base_width` in the config)."""
        width = config.get("base_width")
        if width is None:
            return list(self._brackets)
        if int(width) not in self._by_budget:
            self._by_budget[int(width)] = copy.deepcopy(self._pristine)
        return self._by_budget[int(width)]

    def on_trial_add(self, tune_controller: Any, trial: Any) -> None:
        if not self._metric or not self._metric_op:
            raise ValueError(f"{type(self).__name__} needs a metric and a mode; got {self._metric!r}, {self._mode!r}")
        self._trial_info[trial.trial_id] = self.brackets_for(trial.config)[self.bracket_index(trial.config)]

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        decision = super().on_trial_result(tune_controller, trial, result)
        if trial.config.get("baseline"):
            return TrialScheduler.CONTINUE
        return str(decision)

    def prime(self, records: Iterable[TrialRecord]) -> int:
        """Fill the rungs from the curves of trials recorded before a resume; how many were fed.

        Tune saves neither the scheduler nor its rungs: a restored search (or one rebuilt from
        `trials.jsonl`) would start with empty rungs and let every trial past the first rung
        until new results filled them, so a resumed search stopped other trials than an
        uninterrupted one. Each recorded search trial's curve is replayed into the bracket its
        config has (the same function of seed and config as when it ran), which puts into each
        rung exactly the value that trial reported there. Noise-floor and verification runs never
        passed through this scheduler and are skipped; so are trials whose id a rung already
        holds (priming twice changes nothing).
        """
        metric, op = self._metric, self._metric_op
        if not metric or op is None:
            raise ValueError(f"{type(self).__name__} needs a metric and a mode to be primed")
        fed = 0
        ordered = sorted(records, key=lambda r: (r.ended_at or "", r.trial_id))
        for r in ordered:
            if r.kind not in SEARCH_KINDS or not r.curve:
                continue
            config = search_config_of(r)
            bracket = self.brackets_for(config)[self.bracket_index(config)]
            if any(r.trial_id in recorded for _, recorded in bracket._rungs):
                continue
            trial = SimpleNamespace(trial_id=r.trial_id)
            for point in r.curve:
                step, value = point.get(self._time_attr), point.get(metric)
                if step is None or value is None:
                    continue
                bracket.on_result(trial, step, op * float(value))
            fed += 1
        return fed


def search_config_of(record: TrialRecord) -> dict[str, Any]:
    """The Tune config a recorded search trial ran with, as far as the scheduler reads it."""
    config: dict[str, Any] = {**record.params, "profile": str(record.spec)}
    if record.baseline:
        config["baseline"] = record.baseline
    if record.number >= 0:
        config["number"] = record.number
    return config


def scheduler_of(tuner: Any) -> Any | None:
    """The scheduler object a (restored) Tuner will run with; None where Ray hides it."""
    internal = getattr(tuner, "_local_tuner", None)
    return getattr(getattr(internal, "_tune_config", None), "scheduler", None)


def prime_tuner(tuner: Any, records: Iterable[TrialRecord]) -> int:
    """Prime a Tuner's early stopping from `records` (see `BaselineKeepingASHA.prime`); 0 when
    the search does not stop early."""
    scheduler = scheduler_of(tuner)
    return scheduler.prime(records) if isinstance(scheduler, BaselineKeepingASHA) else 0
