"""`analysis/sequential.py` pinned by hand (issue 51): the design's checks and records, the t
statistics from sums, the levels a statistic passes, Holm over them, and one study decided look
by look with its intervals and seed counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tlmsearch.analysis import sequential as sq
from tlmsearch.analysis.decision import OUTCOMES
from tlmsearch.analysis.sequential_bounds import critical_table
from tlmsearch.errors import ConfigError


def test_design_records_and_reads_back() -> None:
    d = sq.Design(looks=(2, 4, 8), margin=0.02, alpha=0.1, spending="pocock")
    assert (d.n_looks, d.max_seeds, d.fractions) == (3, 8, (0.25, 0.5, 1.0))
    assert d.to_dict() == {"looks": [2, 4, 8], "margin": 0.02, "alpha": 0.1, "spending": "pocock"}
    assert sq.Design.from_dict(d.to_dict()) == d
    assert d.describe() == (
        "group-sequential: 3 looks at 2, 4, 8 seeds per profile, Pocock-type alpha spending, alpha 0.1 for each "
        "claim, Holm over the candidates at each look"
    )
    assert d.history_text() == "" and d.stage_looks() == [(2, 4, 8)] and d.alpha_through(2) == 0.1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"looks": ()}, "must be a non-empty tuple"),
        ({"looks": (2, True)}, "must be a non-empty tuple"),
        ({"looks": (2, 4.0)}, "must be a non-empty tuple"),
        ({"looks": (1, 4)}, "start at >= 2 seeds"),
        ({"looks": (4, 4)}, "must increase"),
        ({"looks": (2, 4), "spending": "haybittle"}, "spending='haybittle' is not allowed; choose one of: obf, pocock"),
        ({"looks": (2, 4), "margin": 0.0}, "margin=0.0"),
    ],
)
def test_design_refusals(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        sq.Design(**kwargs)  # type: ignore[arg-type]


def test_look_schedule_by_hand_and_its_edges() -> None:
    assert sq.look_schedule(10, 3) == (4, 7, 10)  # ceil(10/3), ceil(20/3), 10
    assert sq.look_schedule(2, 1) == (2,)
    assert sq.look_schedule(9, 3, first=4) == (4, 6, 9)
    assert sq.look_schedule(12, sq.MAX_LOOKS)[-1] == 12
    for looks, message in ((0, "from 1 to"), (sq.MAX_LOOKS + 1, "from 1 to"), (True, "from 1 to")):
        with pytest.raises(ConfigError, match=message):
            sq.look_schedule(10, looks)
    with pytest.raises(ConfigError, match="the most seeds 1 must be an integer >= 2"):
        sq.look_schedule(1, 2)
    assert sq.design(8, 2, margin=0.02).looks == (4, 8) and sq.design(8, 2).spending == "obf"


def test_t_stats_by_hand() -> None:
    # seeds [0.01, 0.03, 0.05]: sum 0.09, squares 0.0035; mean 0.03, var 0.0004, se 0.02/sqrt(3)
    delta = math.log1p(0.01)
    mean, se, t_sup, t_ni = sq.t_stats(np.array([0.09]), np.array([0.0035]), 3, delta)
    assert mean[0] == pytest.approx(0.03) and se[0] == pytest.approx(0.02 / math.sqrt(3))
    assert t_sup[0] == pytest.approx(0.03 / (0.02 / math.sqrt(3)))
    assert t_ni[0] == pytest.approx((delta - 0.03) / (0.02 / math.sqrt(3)))
    # no spread: the sign decides; a nan seed: never passes
    _, se0, ts0, tn0 = sq.t_stats(np.array([0.04, -0.04, np.nan]), np.array([0.0008, 0.0008, np.nan]), 2, delta)
    assert se0[:2].tolist() == [0.0, 0.0]
    big = np.finfo(float).max  # an infinite statistic is the largest float: it passes every boundary
    assert ts0.tolist() == [big, -big, -math.inf]
    assert tn0.tolist() == [-big, big, -math.inf]


def test_levels_passed_and_holm_over_them() -> None:
    crit = np.array([np.inf, 2.0, 3.0, np.inf])  # alpha, alpha/2 and an alpha/3 never reached
    assert sq._levels_passed(np.array([1.9, 2.0, 2.5, 3.0, 1e308, np.inf]), crit).tolist() == [0, 1, 1, 2, 2, 2]
    # passed at alpha/2 and alpha: Holm rejects both (alpha/2 first, then alpha); alpha alone: not with 2
    assert sq._holm_rejects(np.array([2, 1]), 0.05).tolist() == [True, True]
    assert sq._holm_rejects(np.array([1, 1]), 0.05).tolist() == [False, False]
    assert sq._holm_rejects(np.array([1]), 0.05).tolist() == [True]
    assert sq._holm_rejects(np.array([0, 2]), 0.05).tolist() == [False, True]


def test_one_study_look_by_look() -> None:
    design = sq.Design(looks=(2, 4), alpha=0.05, calibrate=False)
    crit = critical_table((2, 4), 0.05, "obf", 2, False)
    # candidate 0: a steady gain of 0.02 + tiny noise (shown better at look 2); candidate 1: 0 +- 0.001
    # (shown within the margin at look 2)
    gains = np.array([[0.020, 0.021, 0.019, 0.020], [0.001, -0.001, 0.001, -0.001]])
    out = sq.decide(gains, design)
    assert OUTCOMES[int(out.outcome)] == "better"
    assert out.shown_better.tolist() == [True, False]
    assert out.within_margin.tolist() == [False, True] and out.decided_look.tolist() == [1, 1]
    assert out.stop_look.tolist() == [1, 1] and int(out.last_look) == 1
    mean1, se1 = 0.02, np.std([0.020, 0.021, 0.019, 0.020], ddof=1) / 2
    assert out.mean[0] == pytest.approx(mean1) and out.se[0] == pytest.approx(se1)
    assert out.low[0] == pytest.approx(mean1 - crit[2, 1] * se1) and out.high[0] == pytest.approx(
        mean1 + crit[2, 1] * se1
    )
    assert out.cosine_seeds == 4 and out.candidate_seeds.tolist() == [4, 4]
    assert out.runs == 12 and out.seeds_per_profile == 4.0
    assert not out.active.any()
    # through the first look only: two seeds a profile, nothing decided, both still training
    first = sq.decide(gains, design, through=1)
    assert OUTCOMES[int(first.outcome)] == "inconclusive" and first.active.tolist() == [True, True]
    assert first.runs == 6 and first.mean[0] == pytest.approx(0.0205)


def test_rates_over_studies() -> None:
    design = sq.Design(looks=(2, 4), calibrate=False)
    gains = np.zeros((4, 1, 4))
    gains[:3] = [[0.02, 0.021, 0.019, 0.02]]
    out = sq.decide(gains, design)
    assert out.rate("better") == 0.75 and out.mc_se("better") == pytest.approx(math.sqrt(0.75 * 0.25 / 4))


def test_decide_refuses_what_it_cannot_read() -> None:
    design = sq.Design(looks=(2, 4), calibrate=False)
    with pytest.raises(ValueError, match=r"through=3 must lie in 1\.\.2"):
        sq.decide(np.zeros((1, 4)), design, through=3)
    with pytest.raises(ValueError, match=r"through=0 must lie in 1\.\.2"):
        sq.decide(np.zeros((1, 4)), design, through=0)
    with pytest.raises(ValueError, match="1 seeds is fewer than the first look's 2"):
        sq.decide(np.zeros((1, 1)), design)


def test_a_history_of_stages_by_hand() -> None:
    # stage 1: looks at 2 and 4 seeds, alpha 0.05 spent by its end; stage 2: 8 and 12, 0.05 more
    d = sq.Design(looks=(2, 4, 8, 12), alpha=0.1, stages=(sq.Stage(4, 0.05),), calibrate=False)
    assert [d.stage_of(k) for k in range(4)] == [0, 0, 1, 1]  # a look at a stage's end is in it
    assert [d.alpha_through(k) for k in range(4)] == [0.05, 0.05, 0.1, 0.1]
    assert d.stage_looks() == [(2, 4), (8, 12)]
    assert d.history_text() == (
        "extended after its last look as a new stage: stage 1 (looks at 2, 4 seeds) alpha 0.05, stage 2 (looks at "
        "8, 12 seeds) 0.05 more; the whole history spends alpha 0.1 (earlier stages keep their boundaries; a new "
        "one spends only the alpha not yet spent)"
    )
    assert d.describe().endswith("; " + d.history_text())
    assert d.to_dict()["stages"] == [{"end": 4, "alpha": 0.05, "spending": "obf"}]
    assert sq.Design.from_dict(d.to_dict()) == sq.Design(looks=(2, 4, 8, 12), alpha=0.1, stages=(sq.Stage(4, 0.05),))
    with pytest.raises(ConfigError, match="needs alpha spending"):
        sq.Design(looks=(2, 4, 8), alpha=0.1, spending="nominal", stages=(sq.Stage(4, 0.05),))


def test_defaults_and_a_frozen_result() -> None:
    assert sq.DEFAULT_LOOKS == 4 and sq.design(8).looks == (2, 4, 6, 8)
    out = sq.decide(np.zeros((1, 4)), sq.Design(looks=(2, 4), calibrate=False))
    with pytest.raises(AttributeError):
        out.outcome = np.array(0)  # type: ignore[misc]
