"""verify's learning-rate check in what a run says: summary.json (beside its verdict), summary.md,
report.html (its headline and its figure), `tlmsearch status`; a damaged entry is one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from analysis_fakes import record, search_records, write_run

import tlmsearch
from tlmsearch.cli import main
from tlmsearch.cli.status import status_dict
from tlmsearch.plots.rate_check import rate_check_data, rate_check_markdown
from tlmsearch.rundir.layout import VERIFY

COSINE = "cosine:start=1.5,end=0.5"
KNOTS = "knots:k0=3,k1=1"
SEEDS = (1, 2, 3, 4, 5)
SHIFT = {0.5: 0.0, 1.0: 0.0, 2.0: 0.09}  # the knots profile wins by 0.05 nats, and loses at twice the rate


def _loss(spec: str, seed: int, factor: float) -> float:
    base = {COSINE: 2.30, KNOTS: 2.25, "uniform": 2.32}[spec]
    return base + (SHIFT[factor] if spec == KNOTS else 0.0) + 0.003 * math.sin(3 * seed + len(spec))


def _run(tmp_path: Path, where: str = "run") -> Path:
    recs = search_records()
    recs += [
        record(f"v-{p}-{s}", p, _loss(p, s, 1.0), kind="verify", seed=s)
        for p in (COSINE, KNOTS, "uniform")
        for s in SEEDS
    ]
    runs: dict[str, dict[str, dict[str, str]]] = {}
    for factor in (0.5, 1.0, 2.0):
        runs[format(factor, "g")] = {}
        for role, spec in (("cosine", COSINE), ("candidate", KNOTS)):
            ids = {}
            for s in SEEDS:
                if factor == 1.0:
                    ids[str(s)] = f"v-{spec}-{s}"
                    continue
                tid = f"rc-{factor:g}-{role}-{s}"
                params = {"lr": 2e-3 * factor, "lr_factor": factor}
                recs.append(record(tid, spec, _loss(spec, s, factor), kind="ratecheck", seed=s, params=params))
                ids[str(s)] = tid
            runs[format(factor, "g")][role] = ids
    run = write_run(tmp_path / where, recs)
    doc = {"steps": 40, "decision_seeds": list(SEEDS), "complete": True}
    doc["rate_check"] = {
        "seeds": list(SEEDS), "factors": [0.5, 1.0, 2.0], "base_lr": 2e-3, "rate_source": "calibrated",
        "alpha": 0.05, "steps": 40, "complete": True,
        "groups": [{"group": "transformer", "cosine": COSINE, "candidate": KNOTS, "base_width": 64, "runs": runs}],
    }  # fmt: skip
    (run / VERIFY).write_text(json.dumps(doc))
    return run


def test_the_report_states_the_rate_check_beside_the_verdict(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert main(["report", str(run)]) == 0
    summary = json.loads((run / "summary.json").read_text())
    (v,) = summary["verdicts"]
    assert v["outcome"] == "better" and v["better"] == KNOTS
    check = v["rate_check"]
    assert summary["rate_check"] == [check]
    assert check["outcome"] == "rate_sensitive" and check["reason"] == "flips"
    assert [c["decision"] for c in check["cells"]] == ["better", "better", "worse"]
    assert [c["rate"] for c in check["cells"]] == pytest.approx([1e-3, 2e-3, 4e-3])
    assert all(
        c["n"] == 5 and c["gap_nats"]["low"] < c["gap_nats"]["estimate"] < c["gap_nats"]["high"] for c in check["cells"]
    )
    md = (run / "summary.md").read_text()
    assert "### Learning-rate check: rate-sensitive" in md and "the sign flips" in md
    assert "| 0.004 | twice | 5 |" in md
    page = (run / "report.html").read_text()
    assert "fig-rate-check" in page and "rate-sensitive: the sign flips" in page


def test_status_says_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path)
    (check,) = status_dict(tlmsearch.load(run))["rate_check"]
    assert check["outcome"] == "rate_sensitive"
    assert main(["status", str(run)]) in (0, 1)
    out = capsys.readouterr().out
    assert f"learning-rate check (transformer, {KNOTS} vs cosine): rate-sensitive (better at 0.001" in out


def test_a_damaged_entry_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path)
    doc = json.loads((run / VERIFY).read_text())
    doc["rate_check"]["groups"][0].pop("candidate")
    (run / VERIFY).write_text(json.dumps(doc))
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    assert "rate_check entry is damaged" in err and "Traceback" not in err
    main(["status", str(run)])
    assert "learning-rate check: unreadable" in capsys.readouterr().out


def test_plot_data_and_markdown_of_a_check_dict() -> None:
    check = {
        "group": "g", "candidate": KNOTS, "outcome": "undecided", "outcome_text": "undecided at every rate",
        "headline": "h", "rule": "r", "confidence": 0.983,
        "cells": [
            {"name": "half", "rate": 1e-3, "n": 2, "decision": "undecided",
             "gap_nats": {"estimate": 0.01, "low": -0.2, "high": 0.22}, "gain": None},
            {"name": "base", "rate": 2e-3, "n": 0, "decision": None, "gap_nats": None, "gain": None, "missing": 4},
        ],
    }  # fmt: skip
    pts = rate_check_data([check])
    assert [(p.name, p.rate, p.n, p.decision) for p in pts] == [("half", 1e-3, 2, "undecided"), ("base", 2e-3, 0, None)]
    assert pts[0].low == -0.2 and math.isnan(pts[1].estimate)
    md = rate_check_markdown(check)
    assert md[0] == "### Learning-rate check: undecided at every rate"
    assert "| 0.001 | half | 2 | +0.0100 [-0.2000, +0.2200] |" in "\n".join(md)
    assert "| 0.002 | base | 0 | - |" in "\n".join(md) and rate_check_markdown(None) == []


@pytest.mark.slow
def test_a_study_reports_each_architectures_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tlmsearch.configs.study import StudyConfig
    from tlmsearch.core.base import DataConfig
    from tlmsearch.studies.files import STUDY_CONFIG, STUDY_STATE
    from tlmsearch.studies.report import write_study_report

    study = tmp_path / "st"
    arch = _run(study, "transformer")
    StudyConfig.from_flat(dict(name="st", archs=("transformer",), preset="tiny", model={"n_layers": 4}, seeds=5,
                data=DataConfig(corpus="pydoc"))).save(study / STUDY_CONFIG)  # fmt: skip
    phases = {"transformer/search": "done", "transformer/verify": "done", "transfer/transformer": "pending"}
    (study / STUDY_STATE).write_text(json.dumps({"phases": {k: {"status": v} for k, v in phases.items()}}))
    write_study_report(study)
    summary = json.loads((study / "summary.json").read_text())
    (check,) = summary["rate_checks"]["transformer"]
    assert check["outcome"] == "rate_sensitive" and check["candidate"] == KNOTS
    md = (study / "summary.md").read_text()
    assert "## Learning-rate check (each verdict at half and twice the rate)" in md
    assert f"- transformer: {check['headline']}" in md
    assert "rate-sensitive: the sign flips" in (study / "report.html").read_text()
    assert main(["status", str(study)]) == 0
    out = capsys.readouterr().out
    assert "learning-rate check: rate-sensitive (better at 0.001, better at 0.002, worse at 0.004" in out
    assert "verify done     15 runs (+20 rate check)  transfer pending" in out  # 2 rates x 2 profiles x 5 seeds
    (arch / VERIFY).write_text(json.dumps({"decision_seeds": list(SEEDS), "rate_check": {"groups": [{}]}}))
    assert main(["status", str(study)]) == 0  # a damaged entry: the status still answers, and says so
    assert "learning-rate check: unreadable: verify.json: its rate_check entry is damaged" in capsys.readouterr().out
