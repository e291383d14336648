"""Early stopping that never stops a baseline, with reproducible brackets and rungs per budget.

`BaselineKeepingASHA` is asynchronous successive halving (and asynchronous HyperBand with
several brackets) over Tune's public `FIFOScheduler`, with Ray's rules: a bracket has rungs at
`grace * rf**k` below `max_t`; a trial reaching a rung stops when its reward falls below the
rung's `1 - 1/rf` quantile of the rewards recorded there before it. Beyond Ray's:

- baselines always train to full fidelity (they are the verdict's references), and their
  results fill the rungs, so they set the bar the sampled trials must clear;
- a trial's bracket is drawn from a generator seeded by the search seed and the trial's own
  config (Ray draws from NumPy's unseeded global state), so a search and its resume give every
  trial the same bracket; brackets without a rung before `max_t` are not created;
- each budget of a sweep (`base_width`) has rungs of its own: with one set of rungs, 3-6 % of
  the smallest budgets' trials reached full fidelity against 80 % of the largest;
- a resumed search primes the rungs from the recorded curves (`prime`).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from tlmsearch.rundir.records import SEARCH_KINDS
from tlmsearch.tuning.checkpoints import record_config

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


class Bracket:
    """One ASHA bracket: its rungs (milestone, {trial id: reward}), highest milestone first."""

    def __init__(self, grace: int, max_t: int, reduction_factor: float, s: int) -> None:
        self.rf = reduction_factor
        count = int(np.log(max_t / grace) / np.log(reduction_factor) - s + 1)
        self.rungs: list[tuple[float, dict[str, float]]] = [
            (grace * reduction_factor ** (k + s), {}) for k in reversed(range(count))
        ]

    def on_result(self, trial_id: str, t: float, reward: float) -> str:
        """Record `reward` at the highest rung `t` reached that does not hold the trial yet;
        STOP when it falls below the rung's cutoff (the best 1/rf of the rewards there)."""
        for milestone, recorded in self.rungs:
            if t < milestone or trial_id in recorded:
                continue
            cutoff = np.nanpercentile(list(recorded.values()), (1 - 1 / self.rf) * 100) if recorded else None
            recorded[trial_id] = reward
            return TrialScheduler.STOP if cutoff is not None and reward < cutoff else TrialScheduler.CONTINUE
        return TrialScheduler.CONTINUE


class BaselineKeepingASHA(FIFOScheduler):
    """See the module doc; `brackets` is an upper bound (`brackets_with_rungs`)."""

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
        super().__init__()
        self.time_attr, self.objective, self.max_t, self.seed = time_attr, metric, max_t, seed
        self.sign = {"max": 1.0, "min": -1.0}.get(mode, 0.0)  # rewards: larger is better
        count = min(brackets, brackets_with_rungs(max_t, grace_period, reduction_factor))
        self.shape = (grace_period, max_t, reduction_factor, count)
        self.brackets = self.new_brackets()
        self.by_budget: dict[int, list[Bracket]] = {}  # base_width -> that budget's brackets
        self.bracket_of: dict[str, Bracket] = {}  # trial id -> its bracket

    def new_brackets(self) -> list[Bracket]:
        grace, max_t, rf, count = self.shape
        return [Bracket(grace, max_t, rf, s) for s in range(count)]

    def bracket_probabilities(self) -> list[float]:
        """Ray's choice probabilities: a softmax of each bracket's number of rungs."""
        sizes = np.array([len(b.rungs) for b in self.brackets], dtype=float)
        weights = np.exp(sizes - sizes.max())
        return list(weights / weights.sum())

    def bracket_index(self, config: dict[str, Any]) -> int:
        """The bracket of a trial with this config: a function of the seed and the config only."""
        if len(self.brackets) == 1:
            return 0
        rng = np.random.default_rng([self.seed, bracket_key(config)])
        return int(rng.choice(len(self.brackets), p=self.bracket_probabilities()))

    def brackets_for(self, config: dict[str, Any]) -> list[Bracket]:
        """The brackets of the trial's budget: its own per `base_width`; the shared ones
        when the search has a single budget (no `base_width` in the config)."""
        width = config.get("base_width")
        if width is None:
            return self.brackets
        return self.by_budget.setdefault(int(width), self.new_brackets())

    def bracket_for(self, config: dict[str, Any]) -> Bracket:
        if not self.objective or not self.sign:
            raise ValueError(f"{type(self).__name__} needs a metric and a mode; got {self.objective!r}")
        return self.brackets_for(config)[self.bracket_index(config)]

    def on_trial_add(self, tune_controller: Any, trial: Any) -> None:
        self.bracket_of[trial.trial_id] = self.bracket_for(trial.config)

    def _feed(self, trial: Any, result: dict[str, Any]) -> str:
        if self.time_attr not in result or self.objective not in result:
            return TrialScheduler.CONTINUE
        if result[self.time_attr] >= self.max_t:
            return TrialScheduler.STOP
        reward = self.sign * float(result[self.objective])
        return self.bracket_of[trial.trial_id].on_result(trial.trial_id, result[self.time_attr], reward)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        decision = self._feed(trial, result)
        return TrialScheduler.CONTINUE if trial.config.get("baseline") else decision

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> None:
        if self.time_attr in result and self.objective in result and trial.trial_id in self.bracket_of:
            reward = self.sign * float(result[self.objective])
            self.bracket_of[trial.trial_id].on_result(trial.trial_id, result[self.time_attr], reward)
        self.bracket_of.pop(trial.trial_id, None)

    def on_trial_remove(self, tune_controller: Any, trial: Any) -> None:
        self.bracket_of.pop(trial.trial_id, None)

    def prime(self, records: Iterable[TrialRecord]) -> int:
        """Replay the curves of the search trials recorded before a resume into their brackets
        (each rung gets the value the trial reported there), so the resumed search stops what
        an uninterrupted one would; trials a rung already holds are skipped. How many were fed."""
        fed = 0
        for r in sorted(records, key=lambda r: (r.ended_at or "", r.trial_id)):
            if r.kind not in SEARCH_KINDS or not r.curve:
                continue
            bracket = self.bracket_for(record_config(r))
            if any(r.trial_id in recorded for _, recorded in bracket.rungs):
                continue
            for point in r.curve:
                step, value = point.get(self.time_attr), point.get(self.objective)
                if step is not None and value is not None:
                    bracket.on_result(r.trial_id, step, self.sign * float(value))
            fed += 1
        return fed
