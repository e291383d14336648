"""`tlmsearch study`: per-architecture search + verify, the transfer check, the report, resume.

The end-to-end tests train real tiny models on a local Ray (two architectures, a few steps and
seeds); they are slow-marked. The config and the cross-architecture analysis are checked without
training.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from cli_runs import kill_group, reaped
from study_fakes import tiny_study

from tlmsearch.analysis.crossarch import COSINE, one_shape_answer, paper_gains, transfer_matrix
from tlmsearch.analysis.plan import CONTROLS
from tlmsearch.configs.study import GROUP_CONTROLS, STUDY_CONTROLS, StudyConfig
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.records import read_records
from tlmsearch.studies.cost import estimate, trials_per_arch

tiny = tiny_study  # the shared tiny two-architecture study (tests/helpers/study_fakes.py)


def test_config_round_trips_and_refuses_bad_values(tmp_path: Path) -> None:
    cfg = tiny(tmp_path)
    assert StudyConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.search_config("gated_attention").arch == "gated_attention"
    for bad in ({"archs": ("transformer", "transformer")}, {"archs": ("nope",)}, {"seeds": 1}, {"margin": 0.0},
                {"alpha": 0.5}, {"transfer_seeds": 1}, {"controls": ("nofamily",)}):  # fmt: skip
        with pytest.raises(ConfigError):
            tiny(tmp_path, **bad)


def test_study_controls_are_verifys_plus_the_papers_groups() -> None:
    assert STUDY_CONTROLS == (*CONTROLS, *GROUP_CONTROLS)


def test_cost_estimate_counts_trials_and_flops(tmp_path: Path) -> None:
    cfg = tiny(tmp_path)
    # noise floor 2 (seed 0 is the search's uniform baseline) + search 4 + (top-1, cosine, uniform,
    # early) x 2 seeds + up to 2 targets x 2 seeds
    assert trials_per_arch(cfg) == (2 + 4 + 8, 2 + 4 + 8 + 4)
    assert trials_per_arch(tiny(tmp_path, noise_seeds=0)) == (4 + 8, 4 + 8 + 4)
    est = estimate(cfg)
    assert [a.arch for a in est.archs] == ["transformer", "gated_attention"]
    assert est.archs[1].flops_per_trial > est.archs[0].flops_per_trial > 0  # the gate adds a projection
    assert "TFLOP" in est.text() and "not priced" in est.text() and est.hours is None


def test_tuners_in_threads_hand_worker_threads_the_stop_event_and_lock_the_registry() -> None:
    import threading

    import ray.tune.registry as registry
    import ray.tune.tune as tune_module

    from tlmsearch.tuning.overlap import tune_can_stop_threads, tuners_in_threads

    assert tune_can_stop_threads()
    original, stop, got = tune_module._setup_signal_catching, threading.Event(), []
    with tuners_in_threads(stop):
        worker = threading.Thread(target=lambda: got.append(tune_module._setup_signal_catching()))
        worker.start()
        worker.join()
        assert got == [stop]
        assert {"register", "flush_values", "unregister"} <= set(vars(registry._global_registry))
    assert tune_module._setup_signal_catching is original
    assert not {"register", "flush_values", "unregister"} & set(vars(registry._global_registry))


def _cell(estimate: float, shown: bool | None = None) -> dict:
    return {"gain": {"estimate": estimate, "low": estimate - 0.01, "high": estimate + 0.01}, "n": 3,
            "shown_better": shown}  # fmt: skip


def test_transfer_matrix_and_answer_from_verdicts() -> None:
    own = {
        "a": {
            "comparisons": [
                {
                    "label": "linear",
                    "reference": COSINE,
                    "n": 3,
                    "gain": {"estimate": 0.02, "low": 0.01, "high": 0.03},
                    "shown_better": True,
                }
            ]
        },  # fmt: skip
        "b": {"comparisons": []},
    }
    transfer = {"b": {"comparisons": [{"label": "linear", "reference": COSINE, "n": 2, "gain": {"estimate": -0.01,
                "low": -0.05, "high": 0.03}, "shown_better": False}]}}  # fmt: skip
    matrix = transfer_matrix(["a", "b"], {"a": "linear", "b": COSINE}, own, transfer)
    assert matrix[0]["cells"]["a"]["source"] == "verification" and matrix[0]["cells"]["a"]["shown_better"]
    assert matrix[0]["cells"]["b"]["source"] == "transfer" and matrix[0]["cells"]["b"]["n"] == 2
    assert matrix[1]["cells"] == {"a": {"is_cosine": True}, "b": {"is_cosine": True}}
    text = one_shape_answer(["a", "b"], matrix, {"a": "better", "b": "inconclusive"})
    assert "no shape is shown better than cosine everywhere" in text and "linear (best on a) on a" in text
    assert "inconclusive on b" in text
    gains = paper_gains()
    assert gains[COSINE]["vs_uniform"] == pytest.approx(16.28 / 14.44 - 1)
    assert gains["uniform"]["vs_cosine"] < 0


def _trial_keys(study: Path) -> Counter:
    """(sub-run, kind, profile, seed) of every record: what must be neither lost nor doubled."""
    keys: Counter = Counter()
    for sub in sorted(p for p in study.iterdir() if (p / "trials.jsonl").is_file()):
        for r in read_records(sub):
            if r.kind in ("verify", "compare", "baseline"):
                keys[(sub.name, r.kind, json.dumps(r.profile, sort_keys=True), r.seed)] += 1
            else:  # sampled search trials: the sampler's choice, identified by number
                keys[(sub.name, r.kind, r.number, r.seed)] += 1
    return keys


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uninterrupted tiny study (shared by the end-to-end and the kill/resume tests)."""
    import ray

    from tlmsearch import study

    tmp_path = tmp_path_factory.mktemp("reference")
    result = study(tiny(tmp_path, max_concurrent=1), progress=False)
    assert result.run_dir == (tmp_path / "st").resolve()
    ray.shutdown()  # the kill/resume runs start their own local Ray in subprocesses
    return tmp_path


@pytest.mark.slow
def test_study_end_to_end_two_architectures(reference: Path) -> None:
    from tlmsearch.cli import main

    tmp_path = reference
    run = tmp_path / "st"
    for name in ("study.yaml", "study_state.json", "summary.json", "summary.md", "report.html"):
        assert (run / name).is_file(), name
    s = json.loads((run / "summary.json").read_text())
    assert set(s["verdicts"]) == {"transformer", "gated_attention"}
    for arch in ("transformer", "gated_attention"):  # each search measured its noise floor (seeds 0, 1, 2)
        assert s["noise_floor"][arch]["seeds"] == [0, 1, 2] and s["noise_floor"][arch]["sd"] is not None
    assert "Noise floor of each search" in (run / "summary.md").read_text()
    for v in s["verdicts"].values():
        assert v["outcome"] in ("better", "near_optimal", "inconclusive") and v["n_seeds"] == 2
    labels = {row["label"] for row in s["cross_table"]}
    assert {"uniform", COSINE, "groups:third=early"} <= labels
    shared = [row for row in s["cross_table"] if row["label"] == "uniform"][0]
    assert shared["paper"]["ppl"] == 16.28 and set(shared["cells"]) == {"transformer", "gated_attention"}
    assert [row["source"] for row in s["transfer_matrix"]] == ["transformer", "gated_attention"]
    for row in s["transfer_matrix"]:  # every off-diagonal cell was trained (or the best is cosine itself)
        for arch, cell in row["cells"].items():
            assert cell is not None and ("is_cosine" in cell or cell["n"] == 2 or arch == row["source"])
    state = json.loads((run / "study_state.json").read_text())["phases"]
    assert all(p["status"] == "done" for p in state.values()) and len(state) == 2 * 2 + 2 + 1
    from tlmsearch.studies.report import shortener

    short = shortener(s)  # the report writes profile numbers to 3 significant digits
    assert "transformer" in (run / "report.html").read_text() and short(s["answer"]) in (run / "summary.md").read_text()
    # each architecture: 4 search trials, then every verified profile (the top-1, cosine, uniform,
    # the early group) with the same 2 seeds; nothing twice
    keys = _trial_keys(run)
    assert max(keys.values()) == 1
    for arch in ("transformer", "gated_attention"):
        assert sum(1 for k in keys if k[0] == arch and k[1] in ("baseline", "sampled")) == 4
        seeds: dict[str, set[int]] = {}
        for k in keys:
            if k[0] == arch and k[1] == "verify":
                seeds.setdefault(k[2], set()).add(k[3])
        assert (
            len(seeds) >= 3
            and all(len(v) == 2 for v in seeds.values())
            and len(set(map(frozenset, seeds.values()))) == 1
        )

    # every trial trained its own architecture (phases overlap: one Tuner per thread, one
    # trainable name per run, or a trial could pick up another phase's configuration)
    for sub in (p for p in run.iterdir() if (p / "trials.jsonl").is_file()):
        arch = sub.name.removeprefix("transfer-")
        assert {r.model["arch"] for r in read_records(sub)} == {arch}, sub.name
    # and they did overlap: the second search started before the first verification ended
    assert state["gated_attention/search"]["started"] < state["transformer/verify"]["at"]
    # the README's table of this study, from its summary.json
    from tlmsearch.studies.readme import check_readme, read_summary, readme_block, readme_table

    table = readme_table(read_summary(run))
    for arch, v in s["verdicts"].items():
        assert f"| {arch} | {v['outcome']} | 2 |" in table
    assert short(s["answer"]) in table and all(f"| {short(row['label'])} |" in table for row in s["cross_table"])
    assert check_readme(f"text\n{readme_block(s, 'runs/st')}\n", read_summary(run), "runs/st") == []

    before = keys
    assert main(["resume", str(run), "--quiet"]) == 0  # nothing left to train: the same records
    assert _trial_keys(run) == before
    # without its state file (deleted, as the error for a damaged one says) every phase checks
    # its own records again: nothing is trained twice and the phases end done
    (run / "study_state.json").unlink()
    assert main(["resume", str(run), "--quiet"]) == 0
    assert _trial_keys(run) == before
    phases = json.loads((run / "study_state.json").read_text())["phases"]
    assert all(p["status"] == "done" for p in phases.values()) and len(phases) == len(state)
    assert main(["status", str(run), "--json"]) == 0
    assert main(["status", str(run)]) == 0
    (run / "report.html").unlink()
    assert main(["report", str(run)]) == 0 and (run / "report.html").is_file()  # rebuilt from the records alone
    assert json.loads((run / "summary.json").read_text())["answer"] == s["answer"]


def _losses(study: Path) -> dict:
    out = {}
    for sub in sorted(p for p in study.iterdir() if (p / "trials.jsonl").is_file()):
        for r in read_records(sub):
            key = (sub.name, r.kind, json.dumps(r.profile, sort_keys=True), r.seed)
            out[key] = round(r.metric("val_loss"), 6)
    return out


def _phase_reached(run: Path, phase: str) -> bool:
    """`phase` is running with at least one record of its own, or already done."""
    state_file = run / "study_state.json"
    if not state_file.is_file():
        return False
    status = json.loads(state_file.read_text())["phases"].get(phase, {}).get("status")
    if status == "done":
        return True
    if status != "running":
        return False
    where, what = phase.split("/")
    sub, kind = (run / f"transfer-{what}", "compare") if where == "transfer" else (run / where, what)
    kinds = ("baseline", "sampled") if kind == "search" else (kind,)
    return any(r.kind in kinds for r in read_records(sub))


# each stop lands in the next phase of the same study: the study itself, then each resume of it
# (a study and its resume run the same phases through the same code: `tlmsearch resume` of a
# study re-enters it), so four stops cost one study and five starts, not four studies
STOPS = (
    ("transformer/search", "SIGKILL"),
    ("gated_attention/search", "SIGTERM"),  # beside transformer/verify: both Tuners stop and save
    ("gated_attention/verify", "SIGKILL"),
    ("transfer/transformer", "SIGKILL"),
)


def _stop_in_phase(cmd: list[str], run: Path, phase: str, how: str) -> str:
    """Run `cmd` until `phase` has recorded a trial, then SIGKILL its whole process group (or
    SIGTERM the driver: a graceful stop of every running phase); the phase's status when stopped."""
    import os
    import signal
    import subprocess
    import time

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    with reaped(proc):
        deadline = time.time() + 400
        while not _phase_reached(run, phase):
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            assert time.time() < deadline, f"phase {phase} not reached in time"
            time.sleep(0.2)
        status = json.loads((run / "study_state.json").read_text())["phases"][phase]["status"]
        if how == "SIGKILL":
            kill_group(proc)  # its trial workers too: nothing of it writes any more
        else:
            os.kill(proc.pid, signal.SIGTERM)
            assert proc.wait(timeout=300) != 0  # stopped, not finished
            assert b"Traceback" not in proc.communicate()[1]
    return str(status)


@pytest.mark.slow
def test_study_stopped_in_each_phase_resumes_to_the_same_records(reference: Path, tmp_path: Path) -> None:
    """SIGKILL the whole `tlmsearch study` process group once its first search has recorded a
    trial; SIGTERM the resume once the second search has (both Tuners stop and save); SIGKILL the
    next resume in the second verification and the next in a transfer; then `tlmsearch resume`
    to the end: the records equal the uninterrupted study's (same trials, same losses: training
    is deterministic), none lost, none twice, and none written before any stop changed."""
    import subprocess
    import sys

    tiny(tmp_path, max_concurrent=1).save(tmp_path / "study-config.yaml")
    run = tmp_path / "st"
    study_cmd = [sys.executable, "-m", "tlmsearch", "study", "--config", str(tmp_path / "study-config.yaml"), "--quiet"]
    resume_cmd = [sys.executable, "-m", "tlmsearch", "resume", str(run), "--quiet"]
    befores, statuses = [], []
    for i, (phase, how) in enumerate(STOPS):
        statuses.append(_stop_in_phase(study_cmd if i == 0 else resume_cmd, run, phase, how))
        befores.append(_losses(run))
        assert max(_trial_keys(run).values()) == 1, phase  # nothing twice, stop after stop
    assert len(befores[-1]) > len(befores[0]) > 0, statuses  # each stop came later in the study
    done = subprocess.run(resume_cmd, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    keys = _trial_keys(run)
    assert max(keys.values()) == 1  # nothing twice
    assert keys == _trial_keys(reference / "st")  # nothing lost
    after = _losses(run)
    assert after == _losses(reference / "st")
    for (phase, _), before in zip(STOPS, befores, strict=True):
        assert all(after[k] == v for k, v in before.items()), phase
    assert (
        json.loads((run / "summary.json").read_text())["answer"]
        == json.loads((reference / "st" / "summary.json").read_text())["answer"]
    )
    print(f"phase status at each stop: {statuses}")


@pytest.mark.slow
def test_a_tiny_study_with_looks_verifies_group_sequentially(tmp_path: Path) -> None:
    """One architecture, looks 2 over planned seeds (a pilot of 2, at most 3 deciding): its
    verify.json holds the sequential design and the looks it took, the study's verdict says it was
    group-sequential and is the one `tlmsearch status` of the architecture reads."""
    from tlmsearch import study
    from tlmsearch.analysis.summary import recorded_verdicts
    from tlmsearch.rundir.io import read_verify
    from tlmsearch.rundir.records import read_records

    cfg = tiny(tmp_path, archs=("transformer",), seeds=0, pilot_seeds=2, max_seeds=5, looks=2, noise_seeds=0)
    study(cfg, progress=False)
    run = tmp_path / "st"
    doc = read_verify(run / "transformer")
    seq = doc["sequential"]
    assert doc["pilot_seeds"] == [1, 2] and seq["design"]["looks"] == [2, 3], seq["design"]
    assert 1 <= seq["looks_taken"] <= 2 and doc["complete"]
    (v,) = recorded_verdicts(read_records(run / "transformer"), doc, arch="transformer")
    s = json.loads((run / "summary.json").read_text())
    assert "group-sequential" in v.headline and s["verdicts"]["transformer"]["outcome"] == v.outcome
    assert s["config"]["looks"] == 2
