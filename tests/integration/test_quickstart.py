"""`tlmsearch quickstart` end to end at reduced settings: search -> verify -> report, 6 layers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tlmsearch.configs.presets import preset
from tlmsearch.profiles import ProfileSpec, profile


def test_cpu_xs_baselines_all_differ() -> None:
    """At cpu-xs the baselines and a grouped profile are five different shapes of one budget."""
    budget = preset("cpu-xs").budget()
    texts = ["uniform", "cosine:start=1.5,end=0.5", "linear:start=1.5,end=0.5", "cosine:start=0.5,end=1.5"]
    texts.append("groups:third=late")
    shapes = set()
    for text in texts:
        spec = ProfileSpec.parse(text)
        widths = profile(spec.family, budget, **spec.params)
        assert sum(widths) == 6 * 192
        shapes.add(tuple(widths))
    assert len(shapes) == len(texts)


@pytest.mark.slow
def test_quickstart_runs_the_whole_loop(tmp_path: Path) -> None:
    env = {**os.environ, "TLMSEARCH_CACHE": str(tmp_path / "cache")}
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "tlmsearch", "quickstart", "--trials", "5", "--steps", "9", "--seeds", "2"]
    done = subprocess.run([*cmd, "--name", "q", "--runs-dir", str(runs)], env=env, capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    run = runs / "q"
    # the plan with its estimate comes first: the whole loop's (stdout), then each stage's before
    # its first progress line (stderr); a fresh cache: the first is priced from FLOPs, the verify's measured
    first = done.stdout.splitlines()[0]
    assert first.startswith("quickstart: search 5 trials of 9 steps") and "; estimate " in first, first
    assert "FLOPs at" in first, first
    err = done.stderr.splitlines()
    plan = next(i for i, line in enumerate(err) if line.startswith("search q: 5 trials x 9 steps"))
    assert "; estimate " in err[plan] and plan < next(i for i, line in enumerate(err) if line.startswith("search q "))
    verify = next(line for line in err if line.startswith("verify q (seeds 1..2): "))
    assert "; estimate " in verify and "earlier runs of this shape" in verify, verify
    assert f"report: {run / 'report.html'}" in done.stdout and "done in " in done.stdout
    records = [json.loads(line) for line in (run / "trials.jsonl").read_text().splitlines()]
    kinds = [r["kind"] for r in records]
    assert kinds.count("baseline") == 4 and kinds.count("sampled") == 1 and kinds.count("noise") == 2
    verified = {
        (r["profile"]["family"], json.dumps(r["profile"]["params"]), r["seed"])
        for r in records
        if r["kind"] == "verify"
    }
    assert {seed for *_, seed in verified} == {1, 2}  # two fresh seeds, never the search's seed 0
    assert {("uniform", "{}"), ("cosine", '{"start": 1.5, "end": 0.5}')} <= {v[:2] for v in verified}
    assert all(len(r["widths"]) == 6 for r in records)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["verdicts"] and (run / "report.html").stat().st_size > 10_000 and (run / "summary.md").is_file()
    assert summary["verdicts"][0]["headline"] in done.stdout
    # what stays: no checkpoint of an ended trial, no lock of a driver that ended, a report with one plotly
    assert not list(run.rglob("checkpoint_*")) and not (run / ".lock").exists()
    size = sum(p.stat().st_size for p in run.rglob("*") if p.is_file())
    assert size < 20 * 1024**2 and (run / "report.html").stat().st_size < 1_500_000, size
