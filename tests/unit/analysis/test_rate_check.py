"""The learning-rate check's decision: per rate a paired interval of loss(cosine) - loss(candidate),
across half / base / twice the rate "holds", "rate_sensitive" (flips or changes), "undecided" or
"incomplete"; and the check rebuilt from verify.json's entry and the records it names."""

from __future__ import annotations

import math

import pytest
from analysis_fakes import record

from tlmsearch.analysis.rate_check import (
    BETTER,
    HOLDS,
    INCOMPLETE,
    RATE_SENSITIVE,
    UNDECIDED,
    WORSE,
    cell_decision,
    check_confidence,
    group_base_width,
    rate_candidate,
    rate_cell,
    rate_checks,
    rate_outcome,
    short_text,
)
from tlmsearch.analysis.stats import mean_ci
from tlmsearch.analysis.verdicts import verdicts

COSINE = "cosine:start=1.5,end=0.5"
KNOTS = "knots:k0=3,k1=1"
SEEDS = (1, 2, 3, 4)


@pytest.mark.parametrize(
    ("decisions", "outcome", "reason"),
    [
        ((BETTER, BETTER, BETTER), HOLDS, BETTER),
        ((WORSE, WORSE, WORSE), HOLDS, WORSE),
        ((BETTER, UNDECIDED, WORSE), RATE_SENSITIVE, "flips"),
        ((WORSE, BETTER, BETTER), RATE_SENSITIVE, "flips"),
        ((UNDECIDED, BETTER, UNDECIDED), RATE_SENSITIVE, "changes"),
        ((BETTER, BETTER, UNDECIDED), RATE_SENSITIVE, "changes"),
        ((UNDECIDED, UNDECIDED, WORSE), RATE_SENSITIVE, "changes"),
        ((UNDECIDED, UNDECIDED, UNDECIDED), UNDECIDED, ""),
        ((BETTER, None, BETTER), INCOMPLETE, ""),
        ((None, None, None), INCOMPLETE, ""),
    ],
)
def test_rate_outcome(decisions: tuple[str | None, ...], outcome: str, reason: str) -> None:
    assert rate_outcome(decisions) == (outcome, reason)


def test_rate_outcome_refuses_what_it_cannot_judge() -> None:
    with pytest.raises(ValueError, match="at least one"):
        rate_outcome([])
    with pytest.raises(ValueError, match="unknown decision"):
        rate_outcome([BETTER, "near_optimal", BETTER])


@pytest.mark.parametrize(
    ("low", "high", "decision"),
    [(0.001, 0.02, BETTER), (0.0, 0.02, UNDECIDED), (-0.02, 0.0, UNDECIDED), (-0.02, -1e-9, WORSE)],
)
def test_cell_decision_needs_the_whole_interval_on_one_side(low: float, high: float, decision: str) -> None:
    assert cell_decision(low, high) == decision


def test_rate_cell_is_the_paired_t_interval_at_one_minus_alpha_over_three() -> None:
    cosine = {1: 2.30, 2: 2.32, 3: 2.29, 4: 2.31, 5: math.nan}
    candidate = {1: 2.25, 2: 2.28, 3: 2.26, 4: 2.24, 6: 2.0}  # 5 diverged, 6 has no cosine: neither pairs
    conf = check_confidence(0.05)
    assert conf == pytest.approx(1 - 0.05 / 3)
    cell = rate_cell(0.5, 1e-3, cosine, candidate, confidence=conf)
    want = mean_ci([cosine[s] - candidate[s] for s in SEEDS], conf)
    assert cell.seeds == SEEDS and cell.n == 4
    assert cell.gap == want and cell.gap.confidence == pytest.approx(conf)
    assert cell.cosine_loss == pytest.approx(2.305) and cell.candidate_loss == pytest.approx(2.2575)
    assert cell.decision == (BETTER if want.low > 0 else UNDECIDED)
    assert cell.gain is not None and cell.gain.estimate == pytest.approx(math.expm1(want.estimate))
    d = cell.to_dict()
    assert d["name"] == "half" and d["gap_nats"]["low"] == pytest.approx(want.low) and d["decision"] == cell.decision


def test_rate_cell_without_two_pairs_decides_nothing() -> None:
    conf = check_confidence(0.05)
    none = rate_cell(2.0, 4e-3, {1: 2.3}, {2: 2.2}, confidence=conf, failed=1, missing=2)
    assert none.gap is None and none.decision is None and none.n == 0
    assert "no paired seed yet" in none.text() and "1 run diverged or failed" in none.text()
    one = rate_cell(2.0, 4e-3, {1: 2.3}, {1: 2.2}, confidence=conf)
    assert one.n == 1 and one.decision is None and math.isinf(one.gap.low)  # type: ignore[union-attr]


def _records(gaps: dict[float, dict[int, float]], base: float = 2e-3) -> tuple[list[dict], dict]:
    """Verify records of cosine and the candidate at the base rate, rate-check records at half and
    twice it (loss(cosine) = 2.30, loss(candidate) = 2.30 - gap), and the verify.json entry naming them."""
    recs: list[dict] = []
    runs: dict[str, dict[str, dict[str, str]]] = {}
    for factor, by_seed in gaps.items():
        kind = "verify" if factor == 1.0 else "ratecheck"
        runs[format(factor, "g")] = {"cosine": {}, "candidate": {}}
        for seed, gap in by_seed.items():
            for role, spec, loss in (("cosine", COSINE, 2.30), ("candidate", KNOTS, 2.30 - gap)):
                tid = f"{kind}-{factor:g}-{role}-{seed}"
                recs.append(record(tid, spec, loss, kind=kind, seed=seed, params={"lr": base * factor}))
                runs[format(factor, "g")][role][str(seed)] = tid
    doc = {
        "seeds": list(SEEDS),
        "base_lr": base,
        "rate_source": "calibrated",
        "alpha": 0.05,
        "groups": [{"group": "transformer", "cosine": COSINE, "candidate": KNOTS, "base_width": 64, "runs": runs}],
    }
    return recs, doc


def _gaps(mean: float, spread: float = 0.002) -> dict[int, float]:
    return {s: mean + spread * (-1) ** s for s in SEEDS}


def test_a_win_at_every_rate_holds_across_rates_with_its_intervals() -> None:
    recs, doc = _records({0.5: _gaps(0.03), 1.0: _gaps(0.04), 2.0: _gaps(0.02)})
    (check,) = rate_checks(recs, doc)
    assert check.outcome == HOLDS and check.reason == BETTER
    assert [c.rate for c in check.cells] == pytest.approx([1e-3, 2e-3, 4e-3])
    assert [c.gap.estimate for c in check.cells] == pytest.approx([0.03, 0.04, 0.02])  # type: ignore[union-attr]
    text = check.headline()
    assert "holds across rates" in text and "the candidate better than cosine" in text
    assert "calibrated rate 0.002" in text and "paired seeds 1..4" in text and "98.3% intervals" in text
    for c in check.cells:  # every rate's interval is stated
        assert f"{c.gap.low:+.4f}" in text and f"{c.gap.high:+.4f}" in text  # type: ignore[union-attr]
    d = check.to_dict()
    assert d["outcome"] == "holds" and d["outcome_text"] == "holds across rates" and len(d["cells"]) == 3
    assert short_text(d).startswith("holds across rates (better at 0.001, better at 0.002, better at 0.004")


def test_a_win_that_flips_sign_is_rate_sensitive() -> None:
    recs, doc = _records({0.5: _gaps(0.03), 1.0: _gaps(0.04), 2.0: _gaps(-0.03)})
    (check,) = rate_checks(recs, doc)
    assert (check.outcome, check.reason) == (RATE_SENSITIVE, "flips")
    assert "the sign flips" in check.headline() and "cosine better at twice (0.004)" in check.headline()


def test_a_win_shown_at_the_base_rate_only_is_rate_sensitive_not_reversed() -> None:
    recs, doc = _records({0.5: _gaps(0.01, 0.05), 1.0: _gaps(0.04), 2.0: _gaps(0.0, 0.05)})
    (check,) = rate_checks(recs, doc)
    assert (check.outcome, check.reason) == (RATE_SENSITIVE, "changes")
    text = check.headline()
    assert "the candidate better at base (0.002), not shown at half (0.001), twice (0.004)" in text
    assert "no evidence either way" in text


def test_noise_everywhere_is_undecided_never_no_difference() -> None:
    recs, doc = _records({f: _gaps(0.0, 0.05) for f in (0.5, 1.0, 2.0)})
    (check,) = rate_checks(recs, doc)
    assert check.outcome == UNDECIDED
    assert "not evidence of none" in check.headline()


def test_missing_and_failed_runs_make_it_incomplete() -> None:
    recs, doc = _records({0.5: _gaps(0.03), 1.0: _gaps(0.04), 2.0: _gaps(0.02)})
    twice = doc["groups"][0]["runs"]["2"]
    for seed in ("2", "3", "4"):
        twice["candidate"][seed] = None  # not trained yet
    failed = record("rc-failed", KNOTS, 9.0, kind="ratecheck", seed=1, status="failed")
    twice["candidate"]["1"] = "rc-failed"
    (check,) = rate_checks([*recs, failed], doc)
    assert check.outcome == INCOMPLETE
    cell = check.cells[2]
    assert cell.n == 0 and cell.failed == 1 and cell.missing == 3
    assert "fewer than two paired seeds so far at twice" in check.headline()


def test_no_entry_no_check() -> None:
    assert rate_checks([], None) == [] and rate_checks([], {"groups": []}) == []


def _verify(losses: dict[str, dict[int, float]]) -> list[dict]:
    return [record(f"v-{p}-{s}", p, v, kind="verify", seed=s) for p, d in losses.items() for s, v in d.items()]


def test_the_candidate_is_the_one_shown_better_else_the_best_ranked_non_cosine() -> None:
    shown = _verify({
        COSINE: {s: 2.30 + 0.001 * s for s in SEEDS},
        KNOTS: {s: 2.20 + 0.001 * s for s in SEEDS},
        "uniform": {s: 2.35 + 0.002 * s for s in SEEDS},
    })  # fmt: skip
    (v,) = verdicts(shown, kinds=("verify",))
    assert v.better == KNOTS and rate_candidate(v) == KNOTS
    assert group_base_width(v) == 64  # the fakes' budget: 4 layers x 64
    cosine_first = _verify({
        COSINE: {s: 2.20 + 0.001 * s for s in SEEDS},
        KNOTS: {s: 2.30 + 0.003 * s for s in SEEDS},
        "uniform": {s: 2.25 + 0.002 * s for s in SEEDS},
    })  # fmt: skip
    (w,) = verdicts(cosine_first, kinds=("verify",))
    assert w.better is None and w.best == COSINE and rate_candidate(w) == "uniform"
    (alone,) = verdicts(_verify({COSINE: {s: 2.2 for s in SEEDS}}), kinds=("verify",))
    assert rate_candidate(alone) is None
