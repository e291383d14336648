"""`tlmsearch plan --run`: the price of deciding a run, from the run's own records and verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tlmsearch
from tests.helpers.analysis_fakes import record, search_records, verify_records, write_run
from tlmsearch.cli import main
from tlmsearch.costs.plan import plan
from tlmsearch.errors import ConfigError
from tlmsearch.models.counts import flops_per_token
from tlmsearch.profiles import Budget


def _run(tmp_path: Path, name: str, **verify: object) -> tlmsearch.Study:
    return tlmsearch.load(write_run(tmp_path / name, search_records() + verify_records(**verify)))  # type: ignore[arg-type]


def test_an_inconclusive_run_is_priced_at_the_seeds_its_verdict_asks_for(tmp_path: Path) -> None:
    study = _run(tmp_path, "noisy", spread=0.1, noise=0.05, seeds=3)
    (verdict,) = study.verdicts()
    assert verdict.outcome == "inconclusive" and verdict.seeds_to_decide and verdict.seeds_to_decide > 3
    d = study.deciding_plan(gpu="h200", gpus=2, gpus_per_trial=0.5)
    c = d.config
    assert (d.outcome, d.n_seeds, d.seeds) == ("inconclusive", 3, verdict.seeds_to_decide)
    assert (c.trials, c.verify_profiles, c.seeds, c.verify_steps) == (0, 5, verdict.seeds_to_decide, 40)
    assert (c.gpu, c.gpus, c.gpus_per_trial) == ("h200", 2, 0.5)
    # the shape the records trained (tiny with 4 layers) and their budget (base width 64)
    assert c.model["n_layers"] == 4 and c.model["d_model"] == 32 and c.base_width == 0
    trained = [r.model_config for r in study.records if r.kind == "verify"]
    priced = plan(c)
    assert priced.archs[0].flops_per_token == pytest.approx(flops_per_token(trained[0]))
    assert priced.archs[0].phases[0].runs == 5 * verdict.seeds_to_decide
    assert f"{verdict.seeds_to_decide} seeds per profile (what the paired spread over those 3 asks for)" in d.line


def test_a_decided_run_is_priced_at_the_seeds_it_took_and_seeds_override(tmp_path: Path) -> None:
    study = _run(tmp_path, "clear", spread=0.1, noise=0.001, seeds=5)
    (verdict,) = study.verdicts()
    assert verdict.outcome != "inconclusive"
    d = study.deciding_plan()
    assert d.seeds == verdict.n_seeds == 5 and "the seeds it took" in d.line
    asked = study.deciding_plan(seeds=40)
    assert asked.config.seeds == 40 and "as asked" in asked.line
    wider = Budget(n_layers=4, base_width=96, multiple_of=8)
    other = [
        record(f"w-{p}-{s}", p, 2.2 + 0.01 * s, kind="verify", seed=s, budget=wider)
        for p in ("uniform", "cosine")
        for s in range(3)
    ]
    sweep = tlmsearch.load(write_run(tmp_path / "sweep", search_records() + verify_records(seeds=5) + other))
    assert len(sweep.verdicts()) == 2
    with pytest.raises(ConfigError, match="2 verdicts, one per budget of a sweep; price one budget"):
        sweep.deciding_plan()
    with pytest.raises(ConfigError, match="preset: not a hardware setting"):
        study.deciding_plan(preset="170m")


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "noisy"
    study = _run(tmp_path, "noisy", spread=0.1, noise=0.05, seeds=3)
    assert main(["plan", "--run", str(run), "--gpu", "h200", "--gpus", "1"]) == 0
    out = capsys.readouterr().out
    first, second = out.splitlines()[:2]
    assert first == study.deciding_plan(gpu="h200", gpus=1).line and second.startswith("preset tiny")
    assert "verify" in out and "GPU-" in out
    assert main(["plan", "--run", str(run), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["deciding"].startswith(str(run)) and data["config"]["seeds"] == study.verdicts()[0].seeds_to_decide
    bad = [
        (["--run", str(run), "--layers", "3"], "not --layers"),
        (["--run", str(run), "--trials", "4", "--arch", "titans"], "not --trials, --arch"),
        (["--run", str(tmp_path / "missing")], "does not exist"),
    ]
    search_only = write_run(tmp_path / "search", search_records())
    bad.append((["--run", str(search_only)], "no finished verification"))
    for argv, needle in bad:
        assert main(["plan", *argv]) == 2
        err = capsys.readouterr().err
        assert needle in err and "Traceback" not in err, err
