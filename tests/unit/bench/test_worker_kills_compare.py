"""bench_worker_kills' comparison of a killed run's records with the reference's: what counts as
lost, duplicated, wrongly failed, extra and changed (a curve with other steps, or a loss off by
more than its tolerance)."""

from __future__ import annotations

from bench.bench_worker_kills import TOL, compare
from tlmsearch.rundir.records import TrialRecord


def rec(profile: str, seed: int = 0, status: str = "complete", losses: tuple[float, ...] = (3.0, 2.5), **kw: object):  # type: ignore[no-untyped-def]
    curve = [{"step": 2 * (i + 1), "val_loss": v, "train_loss": v + 0.1} for i, v in enumerate(losses)]
    return TrialRecord(
        trial_id=f"{profile}-{seed}-{status}", profile={"family": profile}, train={"seed": seed}, status=status,
        curve=curve, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def test_equal_records_count_nothing_and_retries_add_up() -> None:
    reference = [rec("uniform"), rec("cosine")]
    got = compare(reference, [rec("cosine", retries=1), rec("uniform")])
    assert got == {"lost": 0, "duplicated": 0, "wrongly_failed": 0, "extra": 0, "changed": 0, "max_diff": 0.0,
                   "retries": 1}  # fmt: skip


def test_each_fault_is_counted_once() -> None:
    reference = [rec("uniform"), rec("cosine"), rec("linear")]
    killed = [
        rec("uniform"), rec("uniform"),  # twice
        rec("cosine", status="failed"),  # failed where the reference trained
        rec("reverse"),  # not in the reference
    ]  # fmt: skip
    got = compare(reference, killed)
    assert (got["lost"], got["duplicated"], got["wrongly_failed"], got["extra"]) == (1, 1, 1, 1)


def test_a_curve_off_by_more_than_the_tolerance_or_with_other_steps_is_changed() -> None:
    reference = [rec("uniform"), rec("cosine")]
    off = compare(reference, [rec("uniform", losses=(3.0, 2.5 + 10 * TOL)), rec("cosine", losses=(3.0,))])
    assert off["changed"] == 2
    within = compare(reference, [rec("uniform", losses=(3.0, 2.5 + TOL / 2)), rec("cosine")])
    assert within["changed"] == 0 and 0 < within["max_diff"] <= TOL
