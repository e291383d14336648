"""verify's choice in a budget sweep: the top k of every budget, not only of the largest."""

from __future__ import annotations

from analysis_fakes import record

from tlmsearch.analysis.plan import choose_profiles
from tlmsearch.profiles import Budget
from tlmsearch.rundir.records import TrialRecord

SMALL, LARGE = Budget(n_layers=4, base_width=32, multiple_of=8), Budget(n_layers=4, base_width=128, multiple_of=8)


def test_top_k_is_per_budget_so_the_smaller_budgets_are_verified_too() -> None:
    # every large-budget trial beats every small-budget one: an overall top 2 would be all large
    recs = [
        record("l1", "cosine:start=1.4,end=0.6", 2.00, budget=LARGE),
        record("l2", "linear:start=1.3,end=0.7", 2.01, budget=LARGE),
        record("l3", "linear:start=1.2,end=0.8", 2.02, budget=LARGE),
        record("s1", "cosine:start=1.3,end=0.7", 2.50, budget=SMALL),
        record("s2", "linear:start=1.1,end=0.9", 2.51, budget=SMALL),
        record("s3", "linear:start=1.4,end=0.6", 2.52, budget=SMALL),
    ]
    chosen = [(p, b) for p, b, name in choose_profiles(recs, top_k=2, controls=()) if name is None]
    assert sorted(b for _, b in chosen) == [32, 32, 128, 128]
    labels = {(p["family"], p["params"]["start"], b) for p, b in chosen}
    assert labels == {("cosine", 1.4, 128), ("linear", 1.3, 128), ("cosine", 1.3, 32), ("linear", 1.1, 32)}
    # and the baselines at each budget
    names = {(name, b) for _, b, name in choose_profiles(recs, top_k=2, controls=()) if name}
    assert names == {("cosine", 32), ("uniform", 32), ("cosine", 128), ("uniform", 128)}


def test_one_budget_is_the_plain_top_k() -> None:
    starts = (1.1, 1.3, 1.5, 1.7)  # distinct widths at 4 x 64
    recs = [record(f"t{i}", f"linear:start={s},end={2 - s}", 2.0 + i / 100) for i, s in enumerate(starts)]
    chosen = [p for p, _, name in choose_profiles(recs, top_k=3, controls=()) if name is None]
    assert [p["params"]["start"] for p in chosen] == [1.1, 1.3, 1.5]


def test_joint_architectures_with_one_mlp_shape_are_distinct_candidates() -> None:
    """Two joint architectures that share their MLP widths but move heads differently are two
    candidates (keyed by TrialRecord.arch_key), while a repeat of one architecture is not."""
    base = record("j1", "joint:mode=attention,heads_start=1.5,heads_end=0.5", 2.00)
    same_mlp = record("j2", "joint:mode=attention,heads_start=0.5,heads_end=1.5", 2.01)
    again = record("j3", "joint:mode=attention,heads_start=1.5,heads_end=0.5", 2.02)
    widths = base["widths"]
    recs = [
        TrialRecord.from_dict({**base, "model": {"attn_heads": [3, 2, 2, 1]}}),
        TrialRecord.from_dict({**same_mlp, "widths": widths, "model": {"attn_heads": [1, 2, 2, 3]}}),
        TrialRecord.from_dict({**again, "widths": widths, "model": {"attn_heads": [3, 2, 2, 1]}}),
    ]
    assert recs[0].arch_key != recs[1].arch_key and recs[0].arch_key == recs[2].arch_key
    chosen = [p for p, _, name in choose_profiles(recs, top_k=3, controls=()) if name is None]
    assert [p["params"]["heads_start"] for p in chosen] == [1.5, 0.5]
