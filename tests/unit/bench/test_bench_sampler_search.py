"""The pure parts of benchmark 5b (sampler x scheduler on real searches): floor, best, trials to it."""

from __future__ import annotations

import math
import statistics

import pytest

from bench.bench_sampler_search import Trial, best_per_seed, noise_floor, refusal, summarise, trials_to


def t(seed: int, number: int, loss: float, *, kind: str = "sampled", full: bool = True, key: str = "",
      sampler: str = "tpe", scheduler: str = "asha") -> Trial:  # fmt: skip
    return Trial(seed, sampler, scheduler, number, kind, key or f"p{number}", 150 if full else 50, full, loss)


def test_noise_floor_pools_baselines_across_seeds_once_each() -> None:
    trials = [
        t(0, 0, 2.0, kind="baseline", key="u"), t(1, 0, 2.2, kind="baseline", key="u"),
        t(0, 0, 9.9, kind="baseline", key="u", sampler="gp"),  # same (baseline, seed) again: ignored
        t(0, 1, 3.0, kind="baseline", key="c"), t(1, 1, 3.0, kind="baseline", key="c"),
        t(0, 2, 1.0),  # sampled: never pooled
    ]  # fmt: skip
    floor, dof = noise_floor(trials)
    pooled = (statistics.variance([2.0, 2.2]) + 0.0) / 2
    assert dof == 2 and floor == pytest.approx(math.sqrt(pooled) / statistics.fmean([2.0, 2.2, 3.0, 3.0]))
    assert math.isnan(noise_floor([t(0, 0, 2.0, kind="baseline")])[0])


def test_best_and_trials_to_the_floor_in_trial_order() -> None:
    trials = [t(0, 2, 2.00), t(0, 0, 2.10, kind="baseline"), t(0, 1, 1.90, full=False), t(0, 3, 2.05)]
    assert best_per_seed(trials) == {0: 2.00}  # a stopped trial's partial value never counts
    assert trials_to(trials, 2.00 * 1.06) == 1  # the baseline, trial 0
    assert trials_to(trials, 2.00 * 1.06, sampled_only=True) == 3
    assert trials_to(trials, 1.5) is None


def test_summarise_measures_each_search_against_the_best_of_its_seed() -> None:
    gp = {"sampler": "gp", "scheduler": "none"}
    trials = [t(0, 0, 2.0, kind="baseline"), t(0, 1, 1.9), t(0, 0, 2.0, kind="baseline", **gp), t(0, 1, 2.1, **gp)]
    rows = {(r["sampler"], r["scheduler"]): r for r in summarise(trials, 0.01)}
    assert rows["tpe", "asha"]["gap_pct"] == 0 and rows["tpe", "asha"]["to_floor"] == 2
    assert rows["gp", "none"]["best_is_baseline"] and rows["gp", "none"]["to_floor"] is None
    assert rows["gp", "none"]["gap_pct"] == pytest.approx(100 * (2.0 / 1.9 - 1))


def test_gp_and_cmaes_with_asha_are_refused_by_the_tool() -> None:
    assert refusal("gp", "asha") and refusal("cmaes", "asha")
    assert refusal("tpe", "asha") is None and refusal("gp", "none") is None
