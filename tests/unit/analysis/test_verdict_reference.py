"""A chosen reference: the verdict compares every candidate with it, recognises it by the model it
builds, names it in its text, and a reference the records show worse comes out beaten (a positive
control the default cosine cannot give)."""

from __future__ import annotations

import json
from pathlib import Path

from analysis_fakes import BUDGET, TRUE, record, search_records, verify_records, write_run

from tlmsearch.analysis.collect import profile_results
from tlmsearch.analysis.verdict import find_reference, reference_name
from tlmsearch.analysis.verdicts import verdicts

WORSE = "knots:k0=1,k1=1.2"  # true loss 2.31: worse than cosine (2.25) and knots 3 -> 1 (2.15) by far


def test_a_worse_reference_is_beaten_by_the_best_candidate() -> None:
    (v,) = verdicts(verify_records(), kinds=("verify",), reference=WORSE)
    assert v.outcome == "better" and v.cosine == WORSE and v.reference == WORSE
    assert v.better == "knots:k0=3,k1=1" and v.better_clears_margin
    assert v.headline.startswith(f"a better profile than {WORSE} exists: knots:k0=3,k1=1 has ")
    assert "cosine" not in v.headline.split("; regime:")[0].replace("best-fit cosine", "")
    # every candidate is compared with the reference: its gains are the planted ones, cosine among them
    gains = {c.label: c.gain.estimate for c in v.comparisons if c.reference == WORSE}
    assert set(gains) == set(TRUE) - {WORSE}
    assert gains["cosine:start=1.5,end=0.5"] > 0.04  # exp(2.31 - 2.25) - 1 = 6.2% less the seeds' noise
    row = next(r for r in v.table if r["label"] == WORSE)
    assert row["gain_vs_cosine"] is None  # the reference's own row
    # the default is still cosine: the same records say the paper's taper is beaten by knots 3 -> 1
    (default,) = verdicts(verify_records(), kinds=("verify",))
    assert default.cosine == "cosine:start=1.5,end=0.5" and default.reference == "cosine"
    assert default.headline.startswith("a better profile than cosine exists")


def test_the_reference_is_recognised_by_its_model_not_its_label() -> None:
    two = BUDGET.replace(n_layers=2)
    cosine, linear = "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5"
    recs = [
        record(f"{spec}-{s}", spec, loss + 0.01 * s, kind="verify", seed=s, budget=two)
        for spec, loss in ((cosine, 2.3), ("uniform", 2.2), ("cosine:start=0.5,end=1.5", 2.5))
        for s in range(3)
    ]
    # linear 1.5 -> 0.5 was trained once, as cosine (one model at 2 layers): verify.json's aliases say so
    results = profile_results(recs, aliases={cosine: [linear]})
    assert find_reference(results, "linear:end=0.5,start=1.5").label == cosine  # any spelling
    assert find_reference(results, "linear:start=1.4,end=0.6") is None  # another model
    (v,) = verdicts(recs, kinds=("verify",), reference=linear, aliases={cosine: [linear]})
    assert v.cosine == cosine and v.reference == linear and v.outcome == "better" and v.better == "uniform"
    assert reference_name(None) == reference_name("cosine") == "cosine" and reference_name(linear) == linear


def test_a_report_compares_with_the_reference_its_verify_recorded(tmp_path: Path) -> None:
    """End to end over a run directory: verify.json's reference decides what `tlmsearch report`
    compares with, and the worse reference comes out beaten there too."""
    from tlmsearch.cli import main

    run = write_run(tmp_path / "run", search_records() + verify_records())
    plan = {"decision_seeds": [0, 1, 2], "pilot_seeds": [], "steps": 40, "complete": True, "reference": WORSE}
    (run / "verify.json").write_text(json.dumps(plan))
    assert main(["report", str(run)]) == 0
    summary = json.loads((run / "summary.json").read_text())
    (v,) = summary["verdicts"]
    assert v["outcome"] == "better" and v["cosine"] == WORSE and v["reference"] == WORSE
    assert v["headline"].startswith(f"a better profile than {WORSE} exists")
    assert f"a better profile than {WORSE} exists" in (run / "summary.md").read_text()
