"""verify's learning-rate check on real Ray: cosine and the best candidate re-trained at half and
twice the rate as "ratecheck" records (their rate in params and in the training config), the check
in verify.json, summary.json and status, and a re-run after an interruption that trains only the
runs without a record. Tiny models (6 steps) on the shared local Ray; slow-marked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tlmsearch.rundir.layout import TRIALS, VERIFY
from tlmsearch.rundir.records import read_records

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("ray_session")]

COSINE = "cosine:start=1.5,end=0.5"
LR = 2e-3


def _tiny_search(runs: Path) -> Path:
    import tlmsearch
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.core.base import DataConfig, TrainConfig

    cfg = SearchConfig(
        name="tiny", runs_dir=str(runs), arch="transformer", preset="tiny", space="knots", sampler="random",
        scheduler="none", trials=2, noise_seeds=0, max_concurrent=1, baselines=("uniform", COSINE),
        train=TrainConfig(steps=6, warmup_steps=2, eval_interval=3, eval_windows=4, batch_size=4, lr=LR),
        data=DataConfig(corpus="pydoc"),
    )  # fmt: skip
    return tlmsearch.search(cfg, progress=False).run_dir


def _rate_records(run: Path) -> list:
    return [r for r in read_records(run) if r.kind == "ratecheck"]


def test_verify_with_the_rate_check_records_it_reports_it_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import tlmsearch
    from tlmsearch.cli import main
    from tlmsearch.cli.status import status_dict
    from tlmsearch.tuning.verify import verify

    run = _tiny_search(tmp_path / "runs")
    first = verify(run, top_k=1, seeds=2, controls=(), rate_check=2, progress=False)
    (v,) = first.verdicts
    (check,) = first.rate_check
    assert check.cosine == COSINE and check.candidate == "uniform" and check.seeds == (1, 2)
    assert check.rate_source == "configured" and check.base_rate == pytest.approx(LR)
    assert [c.rate for c in check.cells] == pytest.approx([LR / 2, LR, 2 * LR])
    assert [c.n for c in check.cells] == [2, 2, 2]
    assert check.outcome in ("holds", "rate_sensitive", "undecided")

    rate = _rate_records(run)  # 2 profiles x half and twice x 2 seeds; the base rate's are the verify runs
    assert len(rate) == 8 and all(r.finished() for r in rate)
    assert sorted((str(r.spec), r.seed, r.params["lr_factor"]) for r in rate) == sorted(
        (p, s, f) for p in (COSINE, "uniform") for s in (1, 2) for f in (0.5, 2.0)
    )
    for r in rate:  # each trained at its own rate, recorded in its params and in its training config
        assert r.params["lr"] == pytest.approx(LR * r.params["lr_factor"]) == pytest.approx(r.train["lr"])
    verify_runs = [r for r in read_records(run) if r.kind == "verify"]
    assert len(verify_runs) == 4 and all(r.train["lr"] == pytest.approx(LR) for r in verify_runs)
    doc = json.loads((run / VERIFY).read_text())["rate_check"]
    assert doc["complete"] and doc["groups"][0]["runs"]["1"]["cosine"]["1"] in {r.trial_id for r in verify_runs}

    assert main(["report", str(run), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rate_check"][0]["outcome"] == check.outcome == summary["verdicts"][0]["rate_check"]["outcome"]
    assert "Learning-rate check" in (run / "summary.md").read_text()
    assert status_dict(tlmsearch.load(run))["rate_check"][0]["headline"] == check.headline()

    # nothing left to train: a second verify trains nothing and says the same
    again = verify(run, top_k=1, seeds=2, controls=(), rate_check=2, progress=False)
    assert again.new_records == [] and again.rate_check == first.rate_check and len(_rate_records(run)) == 8

    # interrupted before its last three runs ended: those three, and only those, train again
    lines = (run / TRIALS).read_text().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line)["kind"] != "ratecheck"] + [
        line for line in lines if json.loads(line)["kind"] == "ratecheck"
    ][:5]
    (run / TRIALS).write_text("".join(kept))
    resumed = verify(run, top_k=1, seeds=2, controls=(), rate_check=2, progress=False)
    assert resumed.new_records == []  # the verification's own runs are all reused
    assert len(_rate_records(run)) == 8
    gone = {(str(r.spec), r.seed, r.params["lr_factor"]) for r in rate[5:]}
    assert {(str(r.spec), r.seed, r.params["lr_factor"]) for r in _rate_records(run)[5:]} == gone
    (after,) = resumed.rate_check
    assert [c.n for c in after.cells] == [2] * 3
    # deterministic on CPU: the re-trained runs reach the same losses, so the same check
    assert after == check
