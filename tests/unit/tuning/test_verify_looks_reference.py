"""A chosen reference (`verify --reference`) on the sequential paths: a group-sequential verify
(`--looks`) and the extension of a finished verification as a new stage decide against the
reference the user named, as the fixed verify does, and `tlmsearch report` re-decides the same
way; once a verification has decided, another reference is refused in one line before anything
trains (its candidates would be tested again at full alpha). Training is faked at `run_fixed`
(records of known losses, as a real run appends them); no Ray."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from analysis_fakes import search_records, write_run
from verify_fakes import FakeRuns, seeded_loss

from tlmsearch.analysis.summary import recorded_verdicts
from tlmsearch.cli import main
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.io import read_verify
from tlmsearch.rundir.layout import VERIFY
from tlmsearch.rundir.records import read_records
from tlmsearch.tuning.verify import verify

STEPS = 40
COSINE = "cosine:start=1.5,end=0.5"
REF = "linear:start=1.2,end=0.8"  # the reference a user names: 10 % worse than every other profile here
WORSE = 0.0953  # log(1.1) nats: REF's perplexity is 1.1x everyone else's


def ref_worse() -> FakeRuns:
    """Every profile at 2.25 nats but REF, WORSE above it; a seed offset shared by a seed's profiles
    (sd 0.05) and a profile's own noise (sd 0.005)."""
    return FakeRuns(seeded_loss(lambda spec: 2.25 + (WORSE if spec == REF else 0.0), 0.005))


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, FakeRuns]:
    fake = ref_worse()
    monkeypatch.setattr("tlmsearch.tuning.verify.run_fixed", fake)
    return write_run(tmp_path / "run", search_records()), fake


def _reported(path: Path) -> list[Any]:
    """The verdicts `tlmsearch report` and `status` give, re-decided from the records."""
    return recorded_verdicts(read_records(path), read_verify(path), arch="transformer")


def _against(v: Any) -> set[str]:
    """The references of a verdict's comparisons other than those with uniform."""
    return {c.reference for c in v.comparisons if c.reference != "uniform"}


def test_looks_decide_against_the_named_reference(run: tuple[Path, FakeRuns]) -> None:
    path, fake = run
    (v,) = verify(path, top_k=1, steps=STEPS, seeds=6, looks=2, reference=REF, progress=False).verdicts
    # against REF every other profile is 10 % better: shown at the first look; against cosine it would
    # be REF that is worse and nothing better (the outcome would not be "better")
    assert v.outcome == "better" and (v.cosine, v.reference) == (REF, REF) and _against(v) == {REF}, v.headline
    assert v.headline.startswith(f"a better profile than {REF} exists") and "group-sequential" in v.headline
    gains = [c.gain.estimate for c in v.comparisons if c.reference == REF]
    assert len(gains) >= 3 and all(0.09 < g < 0.11 for g in gains), gains  # 10 %, the truth
    doc = json.loads((path / VERIFY).read_text())
    assert doc["reference"] == REF and doc["sequential"]["looks_taken"] == 1, doc
    assert {s for spec, s in fake.trained if spec == REF} == {1, 2, 3}  # the reference trained at its look
    (again,) = _reported(path)  # what `tlmsearch report` and `status` give: the same decision
    assert (again.outcome, again.cosine, again.headline) == (v.outcome, v.cosine, v.headline)


def test_the_default_reference_on_the_same_records_is_another_answer(run: tuple[Path, FakeRuns]) -> None:
    path, _ = run  # the control of the test above: cosine as the reference, REF a control beside it
    (v,) = verify(path, top_k=1, steps=STEPS, seeds=6, looks=2, controls=(REF,), progress=False).verdicts
    assert v.outcome != "better" and v.cosine == COSINE and _against(v) == {COSINE}, v.headline


def test_a_pilot_planned_sequential_verify_plans_from_the_reference_pairs(run: tuple[Path, FakeRuns]) -> None:
    path, _ = run
    result = verify(path, top_k=1, steps=STEPS, max_seeds=9, looks=2, reference=REF, progress=False)
    (v,) = result.verdicts
    assert result.pilot == [1, 2, 3] and v.cosine == REF and v.outcome == "better", v.headline


def test_an_extension_keeps_deciding_against_the_reference(run: tuple[Path, FakeRuns]) -> None:
    path, fake = run
    verify(path, top_k=1, steps=STEPS, max_seeds=6, reference=REF, progress=False)  # pilot 1-3, seeds 4-6
    (v,) = verify(path, top_k=1, steps=STEPS, max_seeds=10, alpha=0.1, reference=REF, progress=False).verdicts
    doc = json.loads((path / VERIFY).read_text())
    assert doc["sequential"]["design"]["stages"] == [{"end": 3, "alpha": 0.05, "spending": "obf"}], doc
    assert doc["reference"] == REF and v.cosine == REF and _against(v) == {REF}, v.headline
    (again,) = _reported(path)
    assert again.cosine == REF and again.headline == v.headline


@pytest.mark.parametrize("max_seeds, alpha", [(6, 0.05), (10, 0.1)])
def test_another_reference_after_a_decision_is_refused_before_anything_trains(
    run: tuple[Path, FakeRuns], capsys: pytest.CaptureFixture[str], max_seeds: int, alpha: float
) -> None:
    path, fake = run
    verify(path, top_k=1, steps=STEPS, max_seeds=6, reference=REF, progress=False)
    before, records, doc = list(fake.trained), (path / "trials.jsonl").read_text(), (path / VERIFY).read_text()
    with pytest.raises(ConfigError, match="decided against linear") as err:
        verify(path, top_k=1, steps=STEPS, max_seeds=max_seeds, alpha=alpha, progress=False)  # cosine now
    assert "\n" not in str(err.value) and f"--reference '{REF}'" in str(err.value), err.value
    argv = ["verify", str(path), "--top-k", "1", "--steps", str(STEPS), "--max-seeds", str(max_seeds)]
    argv += ["--alpha", str(alpha), "--reference", "uniform", "--no-report"]
    assert main(argv) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "decided against linear" in lines[0] and "with uniform instead" in lines[0], lines
    assert fake.trained == before and (path / "trials.jsonl").read_text() == records
    assert (path / VERIFY).read_text() == doc
    verify(path, top_k=1, steps=STEPS, max_seeds=6, reference=REF, progress=False)  # its own: read back
    assert fake.trained == before


def test_the_reference_spelt_otherwise_is_the_same_model_reused(run: tuple[Path, FakeRuns]) -> None:
    path, fake = run
    (first,) = verify(path, top_k=1, steps=STEPS, max_seeds=6, reference=REF, progress=False).verdicts
    before = list(fake.trained)
    other = "linear:end=0.8,start=1.2"  # the same profile, its parameters in another order
    (again,) = verify(path, top_k=1, steps=STEPS, max_seeds=6, reference=other, progress=False).verdicts
    assert fake.trained == before, fake.trained[len(before) :]  # nothing trained again
    assert (again.outcome, again.cosine) == (first.outcome, REF), again.headline
    assert [c.gain.estimate for c in again.comparisons] == [c.gain.estimate for c in first.comparisons]
    assert json.loads((path / VERIFY).read_text())["aliases"][REF] == [other]
    # a control spelt otherwise than the records hold is reused the same way
    verify(path, top_k=1, steps=STEPS, max_seeds=6, reference=REF, controls=("bowtie:position=0.75,ratio=0.3",),
           progress=False)  # fmt: skip
    assert fake.trained == before
