"""The random-search control of a study: its trial count, its best profile (its own trials plus
the shared baselines), the named control verify re-trains, and its summary."""

from __future__ import annotations

import math

import pytest
from analysis_fakes import record

from tlmsearch.analysis.plan import choose_profiles, plan
from tlmsearch.analysis.random_control import RANDOM_BEST, control_summary, random_best
from tlmsearch.configs.study import StudyConfig, companion_trials
from tlmsearch.noise_floor import NoiseFloor
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.records import TrialRecord
from tlmsearch.studies.cost import trials_per_arch


def rec(tid: str, spec: str, loss: float, kind: str = "sampled", status: str = "complete") -> TrialRecord:
    return TrialRecord.from_dict(record(tid, spec, loss, kind=kind, status=status))


MAIN = [
    rec("b-uni", "uniform", 1.90, kind="baseline"),
    rec("b-cos", "cosine:start=1.5,end=0.5", 1.85, kind="baseline"),
    rec("s1", "linear:start=1.4,end=0.6", 1.80),
]
KNOT = "knots:k0=1.5,k1=1.2,k2=0.8,k3=0.5,mode=free,interp=pchip"


def test_companion_trains_the_trials_minus_the_shared_baselines() -> None:
    assert companion_trials(16, ("a", "b", "c", "d")) == 12
    assert companion_trials(4, ("a", "b", "c", "d")) == 0 and companion_trials(2, ("a", "b", "c", "d")) == 0
    assert companion_trials(3, ()) == 3
    cfg = StudyConfig.from_flat(dict(archs=("transformer",), trials=6, seed=7, random_control=True))
    main, rnd = cfg.search_config("transformer"), cfg.random_config("transformer")
    assert rnd is not None and rnd.sampler == "random" and rnd.trials == 2 and rnd.baselines == ()
    assert rnd.seed == main.seed == 7 and rnd.train == main.train and rnd.scheduler == main.scheduler
    assert rnd.noise_seeds == 0 and rnd.name == "random-transformer"
    assert StudyConfig.from_flat(dict(archs=("transformer",), trials=4)).random_config("transformer") is None


def test_cost_counts_the_companion_and_the_extra_verified_profile() -> None:
    off = StudyConfig.from_flat(
        dict(
            archs=("transformer",),
            trials=6,
            top_k=1,
            seeds=2,
            noise_seeds=0,
            controls=(),
            lr_calibration="off",
            rate_check=0,
        )
    )
    on = off.replace(random_control=True)
    assert trials_per_arch(off) == (6 + 3 * 2,) * 2  # the search, then top-1, cosine, uniform x 2 seeds
    assert trials_per_arch(on) == (6 + 2 + 4 * 2,) * 2  # + 2 random trials, + random-best x 2 seeds


def test_random_best_pools_its_own_trials_with_the_shared_baselines() -> None:
    rnd = [rec("r1", KNOT, 1.83), rec("r2", "linear:start=1.2,end=0.8", 1.70, status="stopped")]
    best = random_best(rnd, MAIN)
    assert best is not None and best.trial_id == "r1"  # stopped trials never count; sampled s1 is not its
    only_baselines = random_best([rec("r3", KNOT, 1.99)], MAIN)
    assert only_baselines is not None and only_baselines.trial_id == "b-cos"
    assert random_best([], []) is None


def test_named_control_joins_the_verification_under_its_name() -> None:
    prof = ProfileSpec.parse(KNOT).to_dict()
    chosen = choose_profiles(MAIN, 1, controls=(), named={RANDOM_BEST: prof})
    assert [n for _, _, n in chosen] == [None, "cosine", "uniform", RANDOM_BEST]
    planned = plan(MAIN, 1, [1, 2], 40, controls=(), named={RANDOM_BEST: prof})
    assert [p.name for p in planned if p.name == RANDOM_BEST] == [RANDOM_BEST, RANDOM_BEST]
    # a named control that is already chosen (here the search's own best) is not trained twice
    again = choose_profiles(MAIN, 1, controls=(), named={RANDOM_BEST: MAIN[2].profile})
    assert len(again) == 3


def test_control_summary_sets_random_against_the_sampler_in_floor_units() -> None:
    rnd = [rec("r1", KNOT, 1.83)]
    floor = NoiseFloor(seeds=(0, 1, 2), values=(1.90, 1.92, 1.94), planned=3, steps=40)  # sd 0.02
    verdict = {"table": [{"label": str(ProfileSpec.parse(KNOT)), "gain_vs_cosine": {"estimate": 0.01}}]}
    c = control_summary(rnd, MAIN, verdict, floor)
    assert c is not None and c["label"] == str(ProfileSpec.parse(KNOT)) and not c["is_shared_baseline"]
    assert c["search_best"] == str(ProfileSpec.parse("linear:start=1.4,end=0.6"))
    assert c["gap"] == pytest.approx(0.03) and c["gap_sd"] == pytest.approx(1.5)
    assert c["tie"] is True  # 0.03 < 2 x sqrt(2) x 0.02
    assert c["verified"]["gain_vs_cosine"]["estimate"] == 0.01
    no_floor = control_summary(rnd, MAIN, None, None)
    assert no_floor is not None and math.isnan(no_floor["gap_sd"]) and no_floor["tie"] is None
    assert no_floor["verified"] is None
