"""`analysis.sequential_extend` on hand-written verify.json documents (pure): what a finished
verification records, when an extension is a new stage and what that stage's design is, and what
`status` says the history spent. The runs behind it are in tests/unit/tuning/test_verify_*.py."""

from __future__ import annotations

import pytest

from tlmsearch.analysis.sequential import Design, Stage
from tlmsearch.analysis.sequential_extend import continued, decided, history_line, recorded
from tlmsearch.errors import ConfigError

SEEDS = list(range(4, 16))  # deciding seeds 4..15, as a pilot of 3 leaves them
FIXED = {"complete": True, "decision_seeds": SEEDS[:6]}  # a fixed plan, decided on seeds 4..9, levels not recorded


def test_a_fixed_plan_is_one_look_at_its_levels() -> None:
    assert recorded(FIXED) == (Design(looks=(6,), margin=0.01, alpha=0.05), SEEDS[:6])
    assert recorded({**FIXED, "margin": 0.02, "alpha": 0.1}) == (Design(looks=(6,), margin=0.02, alpha=0.1), SEEDS[:6])
    two = {"complete": True, "decision_seeds": [4, 5]}  # the fewest a paired t test decides on
    assert recorded(two) == (Design(looks=(2,)), [4, 5])
    assert recorded({"complete": True, "decision_seeds": [4]}) is None
    assert recorded({**FIXED, "complete": False}) is None and not decided({**FIXED, "complete": False})
    assert decided(FIXED) and not decided({}) and not decided({"complete": True})


def test_an_extension_spends_only_alpha_not_yet_spent() -> None:
    ask = Design(looks=(12,), margin=0.01, alpha=0.05)
    with pytest.raises(ConfigError) as err:
        continued(FIXED, ask, SEEDS, run="r")
    msg = str(err.value)
    assert "spent alpha 0.05 by its last look" in msg and "--alpha 0.1: the new looks spend 0.05 more" in msg, msg
    history, seeds = continued(FIXED, Design(looks=(12,), alpha=0.1, spending="pocock"), SEEDS, run="r")
    assert seeds == SEEDS and history.looks == (6, 12) and history.alpha == 0.1 and history.spending == "pocock"
    assert history.stages == (Stage(end=6, alpha=0.05, spending="obf"),)
    nominal = continued(FIXED, Design(looks=(12,), alpha=0.1, spending="nominal"), SEEDS, run="r")[0]
    assert nominal.spending == "obf"  # a history's stages need alpha spending


def test_what_an_extension_cannot_change() -> None:
    with pytest.raises(ConfigError, match="against the margin 0.01 declared before its first look"):
        continued(FIXED, Design(looks=(12,), margin=0.02, alpha=0.1), SEEDS, run="r")
    with pytest.raises(ConfigError, match=r"these deciding seeds \(5..16\) do not continue them"):
        continued(FIXED, Design(looks=(12,), alpha=0.1), [s + 1 for s in SEEDS], run="r")
    with pytest.raises(ConfigError, match="asks for no seeds beyond them"):
        continued(FIXED, Design(looks=(6,), alpha=0.1), SEEDS[:6], run="r")
    with pytest.raises(ConfigError, match="needs --interval t, not bootstrap"):
        continued(FIXED, Design(looks=(12,), alpha=0.1), SEEDS, run="r", method="bootstrap")


def _twice_extended() -> dict:
    """Seeds 4..9 at 0.05, extended to 4..15 at 0.1 (looks at 6, 9, 12): finished."""
    first = Stage(end=6, alpha=0.05, spending="obf")
    design = Design(looks=(6, 9, 12), alpha=0.1, stages=(first,))
    return {"complete": True, "sequential": {"design": design.to_dict(), "seeds": SEEDS, "alpha_spent": 0.1}}


def test_a_history_run_again_is_the_recorded_history_and_extends_from_its_last_stage() -> None:
    doc = _twice_extended()
    design, _ = recorded(doc)
    assert continued(doc, Design(looks=(9, 12), alpha=0.1), SEEDS, run="r") == (design, SEEDS)  # a resume
    more = SEEDS + [16, 17, 18]
    history, _ = continued(doc, Design(looks=(15,), alpha=0.15), more, run="r")
    assert history.looks == (6, 9, 12, 15) and history.alpha == 0.15
    assert history.stages == (Stage(end=6, alpha=0.05, spending="obf"), Stage(end=12, alpha=0.1, spending="obf"))
    with pytest.raises(ConfigError, match="spent alpha 0.1 by its last look"):
        continued(doc, Design(looks=(15,), alpha=0.1), more, run="r")


def test_the_history_line() -> None:
    assert history_line(FIXED) == (
        "alpha spent by the whole history: 0.05 (one verification; more seeds later are a new stage that needs more "
        "alpha (verify --alpha above it))"
    )
    assert history_line({**FIXED, "alpha": 0.1}).startswith("alpha spent by the whole history: 0.1 (")
    doc = _twice_extended()
    doc["sequential"]["extension"] = "extended after its last look as a new stage"
    assert history_line(doc) == ("alpha spent by the whole history: 0.1 (extended after its last look as a new stage)")
    assert history_line({}) is None and history_line({**FIXED, "complete": False}) is None


def test_a_history_of_three_stages_reads_its_last_stage() -> None:
    """Seeds 4..9 at 0.05, 4..12 at 0.1, 4..15 at 0.15: a re-run is the recorded history (its
    last earlier stage ends at 9 seeds, at 0.1); the same seeds at 0.1 again are refused."""
    stages = (Stage(end=6, alpha=0.05, spending="obf"), Stage(end=9, alpha=0.1, spending="obf"))
    design = Design(looks=(6, 9, 12), alpha=0.15, stages=stages)
    doc = {"complete": True, "sequential": {"design": design.to_dict(), "seeds": SEEDS, "alpha_spent": 0.15}}
    assert continued(doc, Design(looks=(12,), alpha=0.15), SEEDS, run="r") == (design, SEEDS)
    with pytest.raises(ConfigError, match=r"this request asks for no seeds beyond them \(12\)"):
        continued(doc, Design(looks=(12,), alpha=0.1), SEEDS, run="r")
