"""verify --seeds auto: from the pilot's records to the seeds that decide (no Ray), the refusals
of bad seed options before anything trains, and the report deciding on the same seeds."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from analysis_fakes import record, search_records, write_run
from cli_runs import tiny_search

from tlmsearch.analysis.pilot import decision_seeds, pilot_spread, plan_from_pilot
from tlmsearch.analysis.planning import plan_seeds
from tlmsearch.analysis.stats import MIN_BOOTSTRAP_SEEDS
from tlmsearch.analysis.summary import summarize
from tlmsearch.cli import main
from tlmsearch.configs.verify import check_plan_options, seed_count
from tlmsearch.costs.estimate import estimate_text
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.layout import VERIFY

COSINE = "cosine:start=1.5,end=0.5"


def verify_records(losses: dict[str, dict[int, float]]) -> list[dict]:
    """Verify records with the given val_loss per profile and seed."""
    return [
        record(f"v-{spec}-{seed}", spec, loss, kind="verify", seed=seed)
        for spec, by_seed in losses.items()
        for seed, loss in by_seed.items()
    ]


# the fakes' record() turns `loss` into a final val_loss of loss + 2 * (1 - 40/40)^2 = loss
PILOT = {
    COSINE: {1: 2.250, 2: 2.260, 3: 2.240},
    "uniform": {1: 2.255, 2: 2.250, 3: 2.262},
    "knots:k0=3,k1=1": {1: 2.200, 2: 2.230, 3: 2.190},
}


def _sd(spec: str) -> float:
    return statistics.stdev(PILOT[COSINE][s] - PILOT[spec][s] for s in (1, 2, 3))


def test_pilot_spread_is_the_largest_paired_sd_over_candidates() -> None:
    spread = pilot_spread(search_records() + verify_records(PILOT), [1, 2, 3])
    want = max(_sd("uniform"), _sd("knots:k0=3,k1=1"))
    assert spread.sd == pytest.approx(want, rel=1e-9)
    assert spread.n_candidates == 2 and spread.n_pairs == 3
    assert spread.worst == ("uniform" if _sd("uniform") > _sd("knots:k0=3,k1=1") else "knots:k0=3,k1=1")


def test_pilot_spread_ignores_seeds_outside_the_pilot() -> None:
    later = verify_records({COSINE: {4: 2.0}, "uniform": {4: 3.0}, "knots:k0=3,k1=1": {4: 1.0}})
    base = pilot_spread(verify_records(PILOT), [1, 2, 3])
    assert pilot_spread(verify_records(PILOT) + later, [1, 2, 3]) == base


@pytest.mark.slow
def test_plan_from_pilot_is_plan_seeds_on_the_pilot_spread_and_decides_on_fresh_seeds() -> None:
    records = search_records() + verify_records(PILOT)
    plan, spread = plan_from_pilot(records, [1, 2, 3], margin=0.01, alpha=0.05, max_seeds=20)
    same = plan_seeds(sd=spread.sd, pilot_seeds=3, margin=0.01, alpha=0.05, n_candidates=2, max_seeds=20)
    assert plan == same and plan.pilot_seeds == 3 and 2 <= plan.final_seeds <= 17
    seeds = decision_seeds(plan, [1, 2, 3])
    assert seeds == list(range(4, 4 + plan.final_seeds))  # fresh: never a pilot seed
    # a noisier pilot asks for more seeds, up to the cap
    noisy = {k: {s: v + (0.05 * s if k == COSINE else 0.0) for s, v in d.items()} for k, d in PILOT.items()}
    more, _ = plan_from_pilot(verify_records(noisy), [1, 2, 3], margin=0.01, alpha=0.05, max_seeds=20)
    assert more.n_seeds == 20 and more.capped
    capped, _ = plan_from_pilot(verify_records(noisy), [1, 2, 3], margin=0.01, alpha=0.05, max_seeds=6)
    assert capped.n_seeds == 6 and capped.final_seeds == 3


def test_bootstrap_plans_at_least_its_minimum_of_deciding_seeds() -> None:
    plan, _ = plan_from_pilot(verify_records(PILOT), [1, 2, 3], margin=0.5, alpha=0.05, max_seeds=40)
    assert plan.final_seeds == 2  # a huge margin: the t plan needs the minimum
    boot, _ = plan_from_pilot(
        verify_records(PILOT), [1, 2, 3], margin=0.5, alpha=0.05, max_seeds=40, method="bootstrap"
    )
    assert boot.final_seeds == MIN_BOOTSTRAP_SEEDS and boot.half_width < plan.half_width


def test_a_pilot_without_two_paired_seeds_is_refused() -> None:
    broken = {COSINE: {1: 2.25}, "uniform": {1: 2.26, 2: 2.25}}
    with pytest.raises(ConfigError, match="only 1 paired seed"):
        pilot_spread(verify_records(broken), [1, 2])
    with pytest.raises(ConfigError, match="no finished cosine"):
        pilot_spread(verify_records({"uniform": {1: 2.2, 2: 2.3}}), [1, 2])


@pytest.mark.parametrize(
    ("seeds", "pilot", "cap", "method", "message"),
    [
        ("auto", 3, 4, "t", "--max-seeds=4 leaves fewer than 2 fresh seeds after the 3 pilot seeds; allowed: >= 5"),
        ("auto", 1, 20, "t", "--pilot-seeds=1 must be >= 2"),
        ("auto", 3, 20, "bootstrap", "--interval bootstrap needs at least 20 deciding seeds"),
        (0, 3, 20, "t", "must be 'auto' or an integer from 2 to 1000"),
    ],
)
def test_check_plan_options_refuses(seeds: int | str, pilot: int, cap: int, method: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_plan_options(seeds, pilot_seeds=pilot, max_seeds=cap, method=method)


def test_check_plan_options_accepts_good_ones() -> None:
    check_plan_options("auto", pilot_seeds=3, max_seeds=5)
    check_plan_options("auto", pilot_seeds=3, max_seeds=23, method="bootstrap")
    check_plan_options(4, pilot_seeds=3, max_seeds=2)  # the cap only bounds planned seeds


def test_seed_count() -> None:
    assert seed_count("auto") == "auto" and seed_count("7") == 7 and seed_count(7) == 7
    for bad in ("0", "-2", "many", "2.5"):
        with pytest.raises(ConfigError, match="'auto' or an integer"):
            seed_count(bad)


def test_estimate_text_uses_the_pilots_wall_time() -> None:
    assert estimate_text(12, 6, 60.0, 25.0) == "about 2m00s (10.0 s a run as the pilot ran: 6 runs in 60 s)"
    assert estimate_text(4, 0, 0.0, 25.0).startswith("about 1m40s (25.0 s a run, the pilot records' mean")
    assert estimate_text(0, 6, 60.0, 25.0) == "nothing left to train"


def test_summary_decides_on_the_plans_seeds_only(tmp_path: Path) -> None:
    """A pilot seed where cosine is far worse must not enter the verdict the plan decides on."""
    recs = search_records() + verify_records(_decided_losses())
    plan = {"steps": 40, "pilot_seeds": [1, 2, 3], "decision_seeds": list(range(4, 10)), "plan": None}
    decided = summarize(recs, {"arch": "transformer"}, verify_plan=plan)
    (v,) = decided["verdicts"]
    assert v["n_seeds"] == 6 and v["outcome"] == "near_optimal", v["headline"]
    assert decided["verify_plan"]["decision_seeds"] == list(range(4, 10))
    (everything,) = summarize(recs, {"arch": "transformer"})["verdicts"]
    assert everything["n_seeds"] == 9 and everything["outcome"] != "near_optimal"
    # a plan for another step count does not apply
    stale = summarize(recs, {"arch": "transformer"}, verify_plan={**plan, "steps": 99})
    assert stale["verify_plan"] is None and stale["verdicts"][0]["n_seeds"] == 9

    run = write_run(tmp_path / "run", recs)
    (run / VERIFY).write_text(json.dumps(plan))
    assert main(["report", str(run), "--json"]) == 0


def _decided_losses() -> dict[str, dict[int, float]]:
    """Pilot seeds 1-3 with cosine far worse; fresh seeds 4-9 with every profile equal."""
    losses: dict[str, dict[int, float]] = {COSINE: {}, "uniform": {}, "knots:k0=3,k1=1": {}}
    for s in range(4, 10):
        for k, spec in enumerate(losses):
            losses[spec][s] = 2.25 + 0.0004 * math.sin(3 * s + k)
    for s in (1, 2, 3):
        for spec in losses:
            losses[spec][s] = 2.25 + (0.3 if spec == COSINE else 0.0) + 0.001 * s
    return losses


@pytest.mark.slow
def test_an_unfinished_verify_gives_no_verdict_anywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Killed after its pilot and half of its deciding runs (or during the pilot), a verify has no
    verdict in the summary, the report, the API or a study: one would decide on the pilot's seeds
    or on part of the plan. Once verify.json says complete, the deciding seeds decide as before."""
    import tlmsearch
    from tlmsearch.configs.study import StudyConfig
    from tlmsearch.studies.files import own_verdict

    losses = _decided_losses()
    plan = {"steps": 40, "pilot_seeds": [1, 2, 3], "decision_seeds": list(range(4, 10)), "plan": None}
    half = {spec: {s: v for s, v in by.items() if s <= 6} for spec, by in losses.items()}  # seeds 1-3 and 4-6
    stages = {
        "deciding": (
            half,
            {**plan, "complete": False},
            "verification unfinished: 9 of 18 runs of the deciding seeds 4..9",
        ),
        "pilot": (
            {spec: {s: v for s, v in by.items() if s <= 2} for spec, by in losses.items()},
            {**plan, "decision_seeds": [], "complete": False},
            "verification unfinished: 6 runs of its pilot (seeds 1..3) recorded, the deciding seeds not yet planned",
        ),
    }
    for name, (part, doc, note) in stages.items():
        recs = search_records() + verify_records(part)
        summary = summarize(recs, {"arch": "transformer"}, verify_plan=doc)
        assert summary["verdicts"] == [] and summary["verify_plan"] is None, name
        assert summary["verify_unfinished"].startswith(note) and note in summary["notes"][0], summary["notes"]
        assert "run `tlmsearch verify RUN_DIR` again to finish it" in summary["verify_unfinished"]
        run = write_run(tmp_path / name, recs)
        (run / VERIFY).write_text(json.dumps(doc))
        assert main(["report", str(run), "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["verdicts"] == [] and out["verify_unfinished"].startswith(note)
        assert note in (run / "summary.md").read_text()
        assert tlmsearch.load(run).verdicts() == []
        study = tmp_path / f"study-{name}"
        write_run(study / "transformer", recs)
        (study / "transformer" / VERIFY).write_text(json.dumps(doc))
        assert own_verdict(StudyConfig(), study, "transformer") is None
    # finished: the API, the study and the summary decide on the fresh seeds only
    recs = search_records() + verify_records(losses)
    run = write_run(tmp_path / "done", recs)
    (run / VERIFY).write_text(json.dumps({**plan, "complete": True}))
    (v,) = tlmsearch.load(run).verdicts()
    assert v.n_seeds == 6 and v.outcome == "near_optimal", v.headline
    study = tmp_path / "study-done"
    write_run(study / "transformer", recs)
    (study / "transformer" / VERIFY).write_text(json.dumps(plan))  # written before the flag: finished
    assert own_verdict(StudyConfig(), study, "transformer")["n_seeds"] == 6  # type: ignore[index]
    assert summarize(recs, {"arch": "transformer"}, verify_plan=plan)["verify_unfinished"] is None


def test_a_finished_plan_still_decides_until_a_verify_at_other_steps_records_a_run() -> None:
    """verify --steps 80 after a finished verify at 40 steps, stopped before its first record: the
    40-step records keep their verdict on their own deciding seeds (the plan kept as `previous`);
    from its first record on, the new verify is unfinished and gives none."""
    recs = search_records() + verify_records(_decided_losses())
    old = {"steps": 40, "pilot_seeds": [1, 2, 3], "decision_seeds": list(range(4, 10)), "plan": None, "complete": True}
    new = {**old, "steps": 80, "decision_seeds": [], "complete": False, "previous": old}
    summary = summarize(recs, {"arch": "transformer"}, verify_plan=new)
    (v,) = summary["verdicts"]
    assert v["n_seeds"] == 6 and v["outcome"] == "near_optimal" and summary["verify_unfinished"] is None
    assert summary["verify_plan"]["steps"] == 40
    first = record("v-80-1", COSINE, 2.2, kind="verify", seed=1, max_steps=80)
    later = summarize([*recs, first], {"arch": "transformer"}, verify_plan=new)
    assert later["verdicts"] == []
    assert later["verify_unfinished"].startswith("verification unfinished: 1 run of its pilot")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-seeds", "4"], "--max-seeds=4 leaves fewer than 2 fresh seeds after the 3 pilot seeds"),
        (["--pilot-seeds", "2", "--max-seeds", "3"], "--max-seeds=3 leaves fewer than 2 fresh seeds"),
        (["--seeds", "0"], "--seeds=0 must be 'auto' or an integer from 2 to 1000"),
        (["--seeds", "lots"], "--seeds='lots' must be 'auto' or an integer from 2 to 1000"),
        (["--interval", "bootstrap"], "--interval bootstrap needs at least 20 deciding seeds"),
        (["--interval", "bootstrap", "--seeds", "3"], "needs at least 20 seeds (got 3)"),
        (["--margin", "0"], "--margin=0.0 must lie in (0, 1)"),
        (["--alpha", "0.5"], "--alpha=0.5 must lie in (0, 0.5)"),
    ],
)
def test_verify_cli_refuses_bad_seed_options_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    run = write_run(tmp_path / "run", search_records())
    assert main(["verify", str(run), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (run / VERIFY).exists() and not (run / "fixed").exists()  # nothing started


@pytest.mark.slow
def test_verify_auto_plans_prints_runs_and_decides_on_fresh_seeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tiny_search(tmp_path / "runs", trials=3)
    assert main(["verify", str(run), "--top-k", "1", "--pilot-seeds", "2", "--max-seeds", "5", "--no-report"]) == 0
    out = capsys.readouterr().out
    plan_at, verdict_at = out.find("verify plan: "), out.find("[")
    assert 0 <= plan_at < verdict_at, out  # the plan is printed before the verdict
    # before the pilot trains: its runs, the estimate (the search recorded this shape's rate) and
    # the range of fresh-seed runs the planner may add
    pilot = next(line for line in out.splitlines() if line.startswith("verify tiny (pilot 1..2): "))
    assert out.find(pilot) < plan_at and "; estimate " in pilot and "earlier runs of this shape" in pilot, pilot
    assert "runs of the fresh seeds the planner asks for (2-3 a profile)" in pilot, pilot
    assert "fresh seeds" in out and ("s a run as the pilot ran" in out or "nothing left" in out), out
    doc = json.loads((run / VERIFY).read_text())
    assert doc["pilot_seeds"] == [1, 2] and doc["complete"] is True
    fresh = doc["decision_seeds"]
    assert fresh == list(range(3, 3 + len(fresh))) and 2 <= len(fresh) <= 3  # capped at 5 in all
    assert doc["plan"]["n_seeds"] == 2 + len(fresh)
    verified = [json.loads(x) for x in (run / "trials.jsonl").read_text().splitlines()]
    verified = [r for r in verified if r["kind"] == "verify"]
    profiles = {json.dumps(r["profile"], sort_keys=True) for r in verified}
    assert {r["seed"] for r in verified} == {1, 2, *fresh}
    assert len(verified) == len(profiles) * (2 + len(fresh))
    # the report decides on the fresh seeds only, as verify did
    assert main(["report", str(run), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["verify_plan"]["decision_seeds"] == fresh
    assert all(v["n_seeds"] == len(fresh) for v in summary["verdicts"])
    # resuming reuses every finished record: the same pilot gives the same plan
    assert main(["verify", str(run), "--top-k", "1", "--pilot-seeds", "2", "--max-seeds", "5", "--no-report"]) == 0
    assert f"{len(verified)} reused, 0 trained" in capsys.readouterr().out
    assert json.loads((run / VERIFY).read_text())["decision_seeds"] == fresh


@pytest.mark.slow
def test_while_the_deciding_seeds_train_there_is_no_verdict(tmp_path: Path) -> None:
    """Between the pilot and the end of a planned verify (where a kill would leave it), verify.json
    names the deciding seeds with complete false and nothing reports a verdict."""
    import tlmsearch

    run = tiny_search(tmp_path / "runs", trials=3)
    seen: dict[str, object] = {}

    def announce(text: str) -> None:  # called after the pilot, before the fresh seeds train
        if "fresh seeds" in text:
            seen["doc"] = json.loads((run / VERIFY).read_text())
            seen["verdicts"] = tlmsearch.load(run).verdicts()
            seen["summary"] = summarize(tlmsearch.load(run).records, {"arch": "transformer"}, verify_plan=seen["doc"])

    result = tlmsearch.verify(run, top_k=1, pilot_seeds=2, max_seeds=4, announce=announce, progress=False)
    doc = seen["doc"]
    assert doc["complete"] is False and doc["pilot_seeds"] == [1, 2] and doc["decision_seeds"] == [3, 4]  # type: ignore[index]
    assert "previous" not in doc  # type: ignore[operator]
    assert seen["verdicts"] == [] and seen["summary"]["verdicts"] == []  # type: ignore[index]
    done = json.loads((run / VERIFY).read_text())
    assert done["complete"] is True
    assert [v.to_dict() for v in tlmsearch.load(run).verdicts()] == [v.to_dict() for v in result.verdicts]
    # a second verify at another step count keeps the finished plan as `previous` until it ends
    tlmsearch.verify(run, top_k=1, pilot_seeds=2, max_seeds=4, steps=8, announce=announce, progress=False)
    assert seen["doc"]["steps"] == 8 and seen["doc"]["previous"] == done  # type: ignore[index]
    assert seen["verdicts"] == []  # its pilot's records are the latest: unfinished, no verdict
    again = json.loads((run / VERIFY).read_text())
    assert again["complete"] is True and again["steps"] == 8 and "previous" not in again


def test_api_verify_refuses_bad_seed_options_before_training(tmp_path: Path) -> None:
    import tlmsearch

    run = write_run(tmp_path / "run", search_records())
    for kwargs, message in [
        ({"max_seeds": 4}, "--max-seeds=4 leaves fewer than 2 fresh seeds"),
        ({"seeds": "some"}, "must be 'auto' or an integer"),
        ({"method": "bootstrap"}, "needs at least 20 deciding seeds"),
        ({"margin": 0.0}, "margin=0.0 must lie in (0, 1)"),
        ({"alpha": 0.6}, "alpha=0.6 must lie in (0, 0.5)"),
    ]:
        with pytest.raises(ConfigError) as err:
            tlmsearch.verify(run, **kwargs)
        assert message in str(err.value)
    assert not (run / VERIFY).exists() and not (run / "fixed").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"decision', "verify.json: not readable as JSON"),
        ("[1, 2]", "verify.json: expected a JSON object, found list"),
        ('{"decision_seeds": 3}', "verify.json: expected verify's JSON object with a decision_seeds list"),
    ],
)
def test_a_damaged_verify_json_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    run = write_run(tmp_path / "run", search_records() + verify_records(_decided_losses()))
    (run / VERIFY).write_text(text)
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "`tlmsearch verify` rewrites it" in err[0], err
