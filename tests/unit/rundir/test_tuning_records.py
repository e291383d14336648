"""Trial records: append-only log, statuses, Study views, progress line (pure, no Ray)."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from record_fakes import build_record

from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.errors import UserError
from tlmsearch.rundir.records import LayoutError, RecordLog
from tlmsearch.tuning import SearchConfig, Study, TrialRecord, load, read_records
from tlmsearch.tuning.progress import summary_line

CFG = SearchConfig(
    name="r", preset="tiny", model={"n_layers": 4}, trials=8, objectives=("val_loss", "params"),
    base_widths=(32, 96), train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5),
    data=DataConfig(corpus="pydoc"),
)  # fmt: skip


def curve(*losses: float) -> list[dict[str, float]]:
    return [{"step": 10.0 * (i + 1), "val_loss": v} for i, v in enumerate(losses)]


def test_build_record_statuses_and_fields() -> None:
    config = {"profile": "cosine:start=1.5,end=0.5", "base_width": 48, "k0": 0.5, "number": 3}
    full = build_record(CFG, "a", config, {"step": 30, "curve": curve(5, 4, 3), "params_total": 1e4})
    assert full.status == "complete" and full.full_fidelity and full.metrics["val_loss"] == 3
    assert full.metrics["params_total"] == 1e4 and full.number == 3 and full.kind == "sampled"
    assert full.params == {"base_width": 48, "k0": 0.5} and sum(full.widths) == 4 * 48
    assert full.budget["base_width"] == 48 and full.shape["monotonicity"] == "non-increasing"
    stopped = build_record(CFG, "b", config, {"step": 10, "curve": curve(5)})
    assert stopped.status == "stopped" and not stopped.full_fidelity and "step 10 of 30" in stopped.reason
    failed = build_record(CFG, "c", config, {"failed": 1, "reason": "TrainingDiverged: nan", "step": 0})
    assert failed.status == "failed" and failed.reason == "TrainingDiverged: nan" and failed.metrics == {}
    died = build_record(CFG, "d", {**config, "baseline": "uniform"}, None, error="worker died")
    assert died.status == "failed" and died.kind == "baseline" and died.reason == "worker died"
    assert TrialRecord.from_dict(json.loads(json.dumps(full.to_dict()))) == full


def test_record_log_appends_once_per_trial_and_survives_a_torn_line(tmp_path: Path) -> None:
    rec = build_record(CFG, "a", {"profile": "uniform"}, {"step": 30, "curve": curve(3)})
    log = RecordLog(tmp_path)
    assert log.append(rec) and not log.append(rec)
    assert not RecordLog(tmp_path).append(rec)  # a resumed driver reads the ids back
    with (tmp_path / "trials.jsonl").open("a") as f:
        f.write('{"trial_id": "torn", "numb')  # a crash mid-write
    other = rec.replace(trial_id="b")
    assert RecordLog(tmp_path).append(other)
    assert [r.trial_id for r in read_records(tmp_path)] == ["a", "b"]


def _random_records(n: int, seed: int) -> list[TrialRecord]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        status = rng.choice(["complete", "complete", "stopped", "failed"])
        steps = 30 if status == "complete" else rng.choice([0, 10, 20])
        loss, params = round(rng.uniform(3, 5), 1), rng.choice([1e4, 2e4, 3e4])
        metrics = {} if status == "failed" else {"val_loss": loss, "params_total": params}
        kind = rng.choice(["sampled", "sampled", "baseline", "verify"])
        record = TrialRecord(
            trial_id=f"t{i}", kind=kind, status=status, steps=steps, max_steps=30,
            full_fidelity=status == "complete", metrics=metrics, profile={"family": "uniform", "params": {}},
        )  # fmt: skip
        out.append(record)
    return out


def test_pareto_front_matches_brute_force_on_full_fidelity_search_trials() -> None:
    for seed in range(20):
        records = _random_records(25, seed)
        study = Study(Path("."), CFG, records)
        pool = [r for r in records if r.full_fidelity and r.kind in ("baseline", "sampled")]

        points = {r.trial_id: (r.metrics["val_loss"], r.metrics["params_total"]) for r in pool}
        expected = {
            i for i, a in points.items() if not any(b[0] <= a[0] and b[1] <= a[1] and b != a for b in points.values())
        }
        assert set(study.pareto_front()["trial_id"]) == expected
        best = study.best(3)
        assert list(best["val_loss"]) == sorted(r.metrics["val_loss"] for r in pool)[:3]
        assert set(best["status"]) <= {"complete"}


@pytest.mark.parametrize("k", [0, -1, 2.5, "3", True])
def test_best_refuses_a_count_that_is_not_a_positive_integer(k: object) -> None:
    study = Study(Path("."), CFG, _random_records(5, 0))
    with pytest.raises(UserError, match=r"best: k=.* must be a positive integer"):
        study.best(k)  # type: ignore[arg-type]


def test_load_and_dataframe(tmp_path: Path) -> None:
    CFG.save(tmp_path / "search.yaml")
    log = RecordLog(tmp_path)
    for r in _random_records(6, 0):
        log.append(r)
    study = load(tmp_path)
    assert study.config == CFG and len(study.records) == 6
    df = study.trials
    assert list(df["trial_id"]) == [f"t{i}" for i in range(6)]
    assert {"val_loss", "status", "profile", "full_fidelity"} <= set(df.columns)
    assert sum(study.counts().values()) == sum(r.kind in ("baseline", "sampled") for r in study.records)


def test_summary_line_counts_and_best() -> None:
    records = [r for r in _random_records(10, 1) if r.kind != "verify"]
    line = summary_line("demo", records, 12, 2, 65.0)
    assert line.startswith("search demo  1m05s | ") and "/12 ended" in line and "2 running" in line
    full = [r for r in records if r.full_fidelity]
    if full:
        assert f"best val_loss {min(r.metrics['val_loss'] for r in full):.4f}" in line
    assert list(itertools.islice(line.split(" | "), 1))


def test_status_cli_text_and_json(tmp_path: Path, capsys: object) -> None:
    from tlmsearch.cli import main

    CFG.save(tmp_path / "search.yaml")
    log = RecordLog(tmp_path)
    records = _random_records(12, 3)
    for r in records:
        log.append(r)
    assert main(["status", str(tmp_path), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)  # type: ignore[attr-defined]
    own = [r for r in records if r.kind in ("baseline", "sampled")]
    assert status["ended"] == len(own) and status["planned"] == 8
    assert status["counts"]["failed"] == sum(r.status == "failed" for r in own)
    assert {p["trial_id"] for p in status["pareto"]} == set(load(tmp_path).pareto_front()["trial_id"])
    assert main(["status", str(tmp_path)]) == 0
    text = capsys.readouterr().out  # type: ignore[attr-defined]
    assert f"trials: {len(own)}/8 ended" in text and "Pareto front:" in text


def test_progress_of_fixed_trials_counts_only_this_session() -> None:
    """A verify batch shows n/len(items), not the search's earlier records on top."""
    from tlmsearch.tuning.progress import ProgressView

    class Writer:
        cfg = CFG
        written: list = []

        def all_records(self) -> list:
            return [TrialRecord(trial_id="a", kind="sampled"), TrialRecord(trial_id="b", kind="verify")]

    search_view = ProgressView("s", 8, Writer())  # type: ignore[arg-type]
    search_view.setup()
    assert [r.trial_id for r in search_view._records] == ["a"]
    fixed_view = ProgressView("s verify", 4, Writer(), kinds=None)  # type: ignore[arg-type]
    fixed_view.setup()
    assert fixed_view._records == []


def test_record_stores_what_the_worker_trained_and_a_run_of_an_older_layout_is_refused(tmp_path: Path) -> None:
    """The record keeps the worker's exact ModelConfig/TrainConfig/DataConfig; export and
    `Study.model_of` read it. A record without the layout mark (written before) makes its run
    directory one line saying what it is and what to do."""
    from tlmsearch.configs.resolve import trial_shape
    from tlmsearch.export.schedule import export_run
    from tlmsearch.profiles import ProfileSpec

    budget, widths, model = trial_shape(CFG, ProfileSpec.parse("cosine"), 48)
    model = model.replace(vocab_size=97)  # what the tokenizer set in the worker: not the preset's
    trained = {"model": model.to_dict(), "train": CFG.train.to_dict(), "data": CFG.data.to_dict()}
    trained["budget"] = budget.to_dict()
    config = {"profile": "cosine", "base_width": 48, "number": 0}
    new = build_record(CFG, "new", config, {"step": 30, "curve": curve(4, 3), "trained": trained})
    assert new.model_config == model and new.widths == widths == model.mlp_widths
    assert new.train == CFG.train.to_dict() and new.data == CFG.data.to_dict() and new.budget == budget.to_dict()
    assert TrialRecord.from_dict(json.loads(json.dumps(new.to_dict()))) == new

    CFG.save(tmp_path / "search.yaml")
    RecordLog(tmp_path).append(new)
    assert '"layout": 2' in (tmp_path / "trials.jsonl").read_text()
    study = load(tmp_path)
    assert study.model_of(study.record("new")) == model
    ex, _, why = export_run(study, "best", "native", write=False)
    assert "lowest search val_loss (3.0000" in why and ModelConfig.from_dict(json_or_yaml(ex.text)["model"]) == model

    line = new.to_dict()
    for key in ("model", "train", "data", "layout"):  # a trials.jsonl line of tlmsearch 0.1.0
        del line[key]
    with (tmp_path / "trials.jsonl").open("a") as f:
        f.write(json.dumps({**line, "trial_id": "old"}) + "\n")
    with pytest.raises(LayoutError) as err:
        load(tmp_path)
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{tmp_path}: a run directory of layout 1, written by tlmsearch 0.1.0")
    assert text.endswith("this tlmsearch reads layout 2: open it with that tlmsearch, or start a new run")


def json_or_yaml(text: str) -> dict:
    import yaml

    return yaml.safe_load(text)


def test_record_holds_node_devices_and_retries_and_older_records_default_them() -> None:
    result = {"step": 30, "curve": curve(3), "node": "ab" * 28, "devices": ["GPU 1"]}
    rec = build_record(CFG, "a", {"profile": "uniform"}, result, retries=2)
    assert (rec.node, rec.devices, rec.retries) == ("ab" * 28, ("GPU 1",), 2)
    assert TrialRecord.from_dict(json.loads(json.dumps(rec.to_dict()))) == rec
    line = rec.to_dict()
    for key in ("node", "devices", "retries"):  # a trials.jsonl line from before these fields
        del line[key]
    old = TrialRecord.from_dict(line)
    assert (old.node, old.devices, old.retries) == (None, (), 0)


def test_polled_records_are_parsed_only_after_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tlmsearch.rundir import records as records_module

    config = {"profile": "uniform", "number": 0}
    log = RecordLog(tmp_path)
    log.append(build_record(CFG, "a", config, {"step": 30, "curve": curve(5, 4, 3)}))
    parsed = []
    real = records_module.read_records
    monkeypatch.setattr(records_module, "read_records", lambda d: parsed.append(d) or real(d))
    first = records_module.read_records_polled(tmp_path)
    again = records_module.read_records_polled(tmp_path)
    assert [r.trial_id for r in first] == [r.trial_id for r in again] == ["a"] and len(parsed) == 1
    again.clear()  # callers get their own list
    assert len(records_module.read_records_polled(tmp_path)) == 1
    log.append(build_record(CFG, "b", {**config, "number": 1}, {"step": 10, "curve": curve(5)}))
    assert [r.trial_id for r in records_module.read_records_polled(tmp_path)] == ["a", "b"] and len(parsed) == 2
    assert records_module.read_records_polled(tmp_path / "missing") == []
