"""verify's choice in a budget sweep: the top k of every budget, not only of the largest."""

from __future__ import annotations

from analysis_fakes import record

from tlmsearch.analysis.plan import choose_profiles
from tlmsearch.profiles import Budget

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
